package main

import (
	"image"
	"os"
	"runtime/debug"

	"github.com/bicyc/bicyc/data"
)

// Memory model of bicyc-infer, behind the ceilings its help documents.
const (
	// memoryBase is the Go memory of the process apart from images: the
	// runtime, the model's classes and buffers, HTTP connections (about
	// 60 MiB measured with a small model), with room to spare.
	memoryBase = 128 << 20
	// bytesPerPixel is the most memory one image takes per pixel between
	// decoding and its reduction to the model's input: 8 bytes decoded
	// (16-bit RGBA) and 8 for preprocessing's opaque 16-bit copy.
	bytesPerPixel = 16
	// largeImagePixels is the size (1 Mpx, 8 to 16 MiB decoded) from
	// which a decoded image's memory is handed back as soon as the image
	// is reduced (releaseImage).
	largeImagePixels = 1 << 20
	// collectHeldBytes bounds the encoded bytes a batch keeps for
	// --collect-unknown until its images are answered: the batch is
	// classified early once its images' bytes reach it.
	collectHeldBytes = 64 << 20
)

// classifyCeiling is the Go memory ceiling of classifying images of at
// most maxPixels pixels one at a time: memoryBase and one image between
// decoding and reduction. Collecting adds the bytes kept for the batch
// (under collectHeldBytes before its last image) and those of the image
// being read (at most data.MaxImageBytes).
func classifyCeiling(maxPixels int64, collecting bool) int64 {
	ceiling := memoryBase + bytesPerPixel*maxPixels
	if collecting {
		ceiling += collectHeldBytes + data.MaxImageBytes(maxPixels)
	}
	return ceiling
}

// limitMemory sets the Go runtime's soft memory limit to ceiling bytes,
// unless GOMEMLIMIT sets one: the garbage collector then runs before the
// heap grows past the ceiling, instead of letting garbage double it.
// Memory that ONNX Runtime allocates itself comes on top, about the size
// of the model files.
func limitMemory(ceiling int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(ceiling)
	}
}

// releaseImage runs the garbage collector and returns free memory to the
// operating system at once if the image just reduced to the model's input
// had bounds of at least largeImagePixels; the caller must hold no
// reference to it any more. Otherwise the collector, which runs only once
// the heap has grown, lets the next large image be decoded beside the
// garbage of the last: a folder of 4096x4096 16-bit images peaked at
// 445-583 MiB resident that way, and at 317 MiB with this (the live
// memory of one such image is 256 MiB).
func releaseImage(bounds image.Rectangle) {
	if int64(bounds.Dx())*int64(bounds.Dy()) >= largeImagePixels {
		debug.FreeOSMemory()
	}
}
