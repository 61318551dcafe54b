package main

import (
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/serve"
)

// collectHeldBytes bounds the encoded bytes a batch keeps for
// --collect-unknown until its images are answered: the batch is classified
// early once its images' bytes reach it.
const collectHeldBytes = 64 << 20

// classifyCeiling is the Go memory ceiling of classifying images of at
// most maxPixels pixels one at a time: serve.MemoryBase and one image
// between decoding and reduction. Collecting adds the bytes kept for the
// batch (under collectHeldBytes before its last image) and those of the
// image being read (at most imaging.MaxImageBytes).
func classifyCeiling(maxPixels int64, collecting bool) int64 {
	ceiling := serve.MemoryBase + serve.BytesPerPixel*maxPixels
	if collecting {
		ceiling += collectHeldBytes + imaging.MaxImageBytes(maxPixels)
	}
	return ceiling
}
