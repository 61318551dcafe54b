package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
)

// Cameras and phones store a JPEG's pixels as the sensor read them and
// record in the EXIF Orientation tag (0x0112) how to turn them for display:
// a portrait photo from a phone is usually a landscape image with tag 6.
// DecodeImage applies the tag, as browsers and Pillow's
// ImageOps.exif_transpose do, so training and inference both see photos
// upright. The tag values, and how the displayed image follows from the
// stored one:
//
//	1 as stored            5 transposed (main diagonal)
//	2 mirrored left-right  6 turned 90 degrees clockwise
//	3 turned 180 degrees   7 transversed (anti-diagonal)
//	4 mirrored top-bottom  8 turned 90 degrees counter-clockwise
const (
	orientationNormal    = 1
	orientationTranspose = 5 // the first value that swaps width and height
)

// jpegOrientation returns the EXIF Orientation tag of the JPEG whose first
// bytes are header, 1 when there is none. The EXIF segment (APP1) precedes
// the frame header, so the bytes image.DecodeConfig read suffice. Like
// browsers, it ignores what it cannot read: a malformed or truncated
// segment, an offset outside it or a value outside 1-8 means 1.
func jpegOrientation(header []byte) int {
	if len(header) < 2 || header[0] != 0xff || header[1] != 0xd8 {
		return orientationNormal
	}
	for i := 2; i+4 <= len(header); {
		if header[i] != 0xff {
			return orientationNormal
		}
		marker := header[i+1]
		switch {
		case marker == 0xff: // fill byte before a marker
			i++
			continue
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd7: // no length
			i += 2
			continue
		case marker == 0xda || marker == 0xd9: // scan data or end: no EXIF after
			return orientationNormal
		}
		end := i + 2 + int(binary.BigEndian.Uint16(header[i+2:]))
		if end < i+4 || end > len(header) {
			return orientationNormal
		}
		if segment := header[i+4 : end]; marker == 0xe1 && bytes.HasPrefix(segment, []byte("Exif\x00\x00")) {
			return tiffOrientation(segment[6:])
		}
		i = end
	}
	return orientationNormal
}

// tiffOrientation reads the Orientation tag from the first IFD of the TIFF
// structure an EXIF segment holds, 1 when it is absent or unreadable.
func tiffOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return orientationNormal
	}
	var order binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return orientationNormal
	}
	if order.Uint16(tiff[2:]) != 42 {
		return orientationNormal
	}
	ifd := uint64(order.Uint32(tiff[4:]))
	if ifd+2 > uint64(len(tiff)) {
		return orientationNormal
	}
	count := uint64(order.Uint16(tiff[ifd:]))
	for e := ifd + 2; e+12 <= uint64(len(tiff)) && e < ifd+2+12*count; e += 12 {
		if order.Uint16(tiff[e:]) != 0x0112 || order.Uint32(tiff[e+4:]) != 1 {
			continue
		}
		var v uint32
		switch order.Uint16(tiff[e+2:]) {
		case 3: // SHORT, the type the EXIF standard gives the tag
			v = uint32(order.Uint16(tiff[e+8:]))
		case 4: // LONG, written by a few tools
			v = order.Uint32(tiff[e+8:])
		}
		if v >= 1 && v <= 8 {
			return int(v)
		}
		return orientationNormal
	}
	return orientationNormal
}

// orient returns img as displayed under EXIF orientation o: img itself for
// 1 (or any value outside 2-8), otherwise a view that maps each pixel to
// its source, so a large photo is not copied before preprocessing reads it.
func orient(img image.Image, o int) image.Image {
	if o <= orientationNormal || o > 8 {
		return img
	}
	fast, _ := img.(image.RGBA64Image)
	src := img.Bounds()
	w, h := src.Dx(), src.Dy()
	if o >= orientationTranspose {
		w, h = h, w
	}
	return &orientedImage{src: img, fast: fast, orientation: o, srcRect: src, bounds: image.Rect(0, 0, w, h)}
}

// orientedImage is a read-only view of src turned by an EXIF orientation,
// with bounds at (0, 0), computed once: preprocessing reads every pixel.
// It keeps src's RGBA64At fast path.
type orientedImage struct {
	src         image.Image
	fast        image.RGBA64Image // src, when it has RGBA64At
	orientation int
	srcRect     image.Rectangle
	bounds      image.Rectangle
}

func (m *orientedImage) ColorModel() color.Model { return m.src.ColorModel() }

func (m *orientedImage) Bounds() image.Rectangle { return m.bounds }

// source maps a displayed pixel (x, y) to the stored pixel it shows.
func (m *orientedImage) source(x, y int) (int, int) {
	w, h := m.srcRect.Dx(), m.srcRect.Dy()
	switch m.orientation {
	case 2:
		x = w - 1 - x
	case 3:
		x, y = w-1-x, h-1-y
	case 4:
		y = h - 1 - y
	case 5:
		x, y = y, x
	case 6:
		x, y = y, h-1-x
	case 7:
		x, y = w-1-y, h-1-x
	case 8:
		x, y = w-1-y, x
	}
	return m.srcRect.Min.X + x, m.srcRect.Min.Y + y
}

func (m *orientedImage) At(x, y int) color.Color {
	if !image.Pt(x, y).In(m.bounds) {
		return color.RGBA64{}
	}
	return m.src.At(m.source(x, y))
}

func (m *orientedImage) RGBA64At(x, y int) color.RGBA64 {
	if !image.Pt(x, y).In(m.bounds) {
		return color.RGBA64{}
	}
	sx, sy := m.source(x, y)
	if m.fast != nil {
		return m.fast.RGBA64At(sx, sy)
	}
	r, g, b, a := m.src.At(sx, sy).RGBA()
	return color.RGBA64{R: uint16(r), G: uint16(g), B: uint16(b), A: uint16(a)}
}
