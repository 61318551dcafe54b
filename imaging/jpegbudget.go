package imaging

import (
	"context"
	"fmt"
	"io"
)

// The work of decoding a JPEG grows with its scans: a progressive JPEG
// may repeat its AC scans without end, each a few bytes long and each a
// pass over every block of its components, so 231 KB of 6000 scans of a
// 4096x4096 image took 29 s to decode. Before any pixel is decoded, the
// encoded image is walked marker by marker and refused when it has more
// scans or more work than these budgets allow.
const (
	// MaxJPEGScans is the most scans a JPEG may have. Encoders write 1
	// (baseline) to about 10 (libjpeg's progressive script; optimising
	// encoders write a few more).
	MaxJPEGScans = 100
	// MaxJPEGScanPasses bounds a JPEG's decoding work: the pixels of every
	// scan's components, summed over its scans, at most this many times
	// the pixel limit. libjpeg's progressive script makes 8 such passes
	// over a 4:2:0 image and 14 over a 4:4:4 one; at 16 Mpx the limit is
	// about 0.2 s of decoding.
	MaxJPEGScanPasses = 32
)

// jpegWork is what jpegStructure reads from an encoded JPEG: its scans
// and its decoding work in component pixels (a scan of the full-size luma
// of a WxH image is W*H; of 2x2 subsampled chroma, a quarter of it).
type jpegWork struct {
	scans int
	work  int64
}

// checkJPEGBudget refuses the JPEG in b when it has more than MaxJPEGScans
// scans or more work than MaxJPEGScanPasses times maxPixels; the error
// wraps ErrTooLarge.
func checkJPEGBudget(b []byte, maxPixels int64) error {
	w := jpegStructure(b)
	switch {
	case w.scans > MaxJPEGScans:
		return fmt.Errorf("jpeg has %d scans, more than the limit of %d (a decoding bomb: each scan is a pass over the image): %w",
			w.scans, MaxJPEGScans, ErrTooLarge)
	case w.work > MaxJPEGScanPasses*maxPixels:
		return fmt.Errorf("jpeg's %d scans cover %d component pixels, more than the limit of %d (%d passes over %d pixels): %w",
			w.scans, w.work, MaxJPEGScanPasses*maxPixels, MaxJPEGScanPasses, maxPixels, ErrTooLarge)
	}
	return nil
}

// jpegStructure walks the marker segments of the JPEG in b (ITU T.81,
// annex B) and counts its scans and their work. It reads what decoders
// read: segments by their lengths (an EXIF thumbnail inside APP1 is
// skipped whole), the entropy-coded data after each SOS up to the next
// marker (0xFF followed by neither a stuffed 0x00 nor a restart marker),
// and it stops at EOI or where the data ends or stops making sense; a
// decoder then fails on the same bytes.
func jpegStructure(b []byte) jpegWork {
	type component struct{ id, h, v byte }
	var (
		out          jpegWork
		width, high  int64
		comps        []component
		hmax, vmax   byte
		i            int
		entropyCoded bool
	)
	compPixels := func(id byte) int64 {
		for _, c := range comps {
			if c.id == id && hmax > 0 && vmax > 0 {
				return ceilDiv(width*int64(c.h), int64(hmax)) * ceilDiv(high*int64(c.v), int64(vmax))
			}
		}
		return 0
	}
	for i < len(b) {
		if entropyCoded {
			// Find the marker that ends the entropy-coded data.
			if b[i] != 0xFF || i+1 >= len(b) {
				i++
				continue
			}
			if next := b[i+1]; next == 0x00 || next >= 0xD0 && next <= 0xD7 {
				i += 2
				continue
			}
			entropyCoded = false
		}
		// Between segments: skip anything up to 0xFF, then fill bytes.
		if b[i] != 0xFF {
			i++
			continue
		}
		for i < len(b) && b[i] == 0xFF {
			i++
		}
		if i >= len(b) {
			break
		}
		marker := b[i]
		i++
		switch {
		case marker == 0xD9: // EOI
			return out
		case marker == 0xD8, marker == 0x01, marker >= 0xD0 && marker <= 0xD7, marker == 0x00:
			continue // no length
		}
		if i+2 > len(b) {
			return out
		}
		length := int(b[i])<<8 | int(b[i+1])
		if length < 2 || i+length > len(b) {
			return out
		}
		seg := b[i+2 : i+length]
		i += length
		switch {
		case isSOF(marker) && len(seg) >= 6:
			high, width = int64(seg[1])<<8|int64(seg[2]), int64(seg[3])<<8|int64(seg[4])
			n := int(seg[5])
			comps, hmax, vmax = comps[:0], 0, 0
			for k := 0; k < n && 6+3*k+2 < len(seg); k++ {
				c := component{seg[6+3*k], seg[7+3*k] >> 4, seg[7+3*k] & 0x0F}
				comps = append(comps, c)
				hmax, vmax = max(hmax, c.h), max(vmax, c.v)
			}
		case marker == 0xDA && len(seg) >= 1: // SOS
			out.scans++
			for k := 0; k < int(seg[0]) && 1+2*k < len(seg); k++ {
				out.work += compPixels(seg[1+2*k])
			}
			entropyCoded = true
		}
	}
	return out
}

// isSOF reports whether marker starts a frame (SOF0-3, 5-7, 9-11, 13-15).
func isSOF(marker byte) bool {
	return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ctxReader passes reads through until ctx is done, then fails with
// ctx.Err(): a decoder reading from it stops within one read of a
// cancelled request. A chunk above 0 bounds each read.
type ctxReader struct {
	ctx   context.Context
	r     io.Reader
	chunk int
}

// decodeReadChunk bounds each read of a JPEG decoded from memory, so a
// decoder that does much work per byte (a JPEG's scans of a few bytes
// each) asks again often; reads from the source are not bounded (a file's
// reads stay as large as its reader makes them).
const decodeReadChunk = 1 << 10

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.chunk > 0 && len(p) > c.chunk {
		p = p[:c.chunk]
	}
	return c.r.Read(p)
}
