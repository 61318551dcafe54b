package imaging

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// meanAbsDiff is the mean absolute difference of two images' 8-bit R, G
// and B over their common bounds, which must start at (0, 0).
func meanAbsDiff(a, b image.Image) float64 {
	var sum, n float64
	r := a.Bounds().Intersect(b.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, _ := a.At(x, y).RGBA()
			br, bg, bb, _ := b.At(x, y).RGBA()
			for _, d := range [3]int{int(ar>>8) - int(br>>8), int(ag>>8) - int(bg>>8), int(ab>>8) - int(bb>>8)} {
				sum += float64(max(d, -d))
				n++
			}
		}
	}
	return sum / n
}

// TestDecodeEXIFOrientation decodes JPEGs written by Pillow with every EXIF
// orientation (testdata/exif/gen.py, which checked each against Pillow's
// ImageOps.exif_transpose): each comes back upright, equal to the upright
// picture up to JPEG's loss, and the stored pixels, decoded without the
// tag, are not (wrong size or wrong quadrants), so the files test the tag.
func TestDecodeEXIFOrientation(t *testing.T) {
	upright, err := DecodeImageFile(filepath.Join("testdata", "exif", "upright.png"))
	if err != nil {
		t.Fatal(err)
	}
	for o := 1; o <= 8; o++ {
		path := filepath.Join("testdata", "exif", fmt.Sprintf("orient-%d.jpg", o))
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := jpegOrientation(raw); got != o {
			t.Errorf("%s: orientation %d, want %d", path, got, o)
		}
		img, err := DecodeImageFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds() != upright.Bounds() {
			t.Errorf("%s: bounds %v, want %v", path, img.Bounds(), upright.Bounds())
			continue
		}
		if d := meanAbsDiff(img, upright); d > 3 {
			t.Errorf("%s: mean difference %.2f from the upright picture", path, d)
		}
		stored, err := jpeg.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if o > 1 && stored.Bounds() == upright.Bounds() && meanAbsDiff(stored, upright) < 30 {
			t.Errorf("%s: the stored pixels already look upright (difference %.2f)", path, meanAbsDiff(stored, upright))
		}
		// Preprocessing reads the view through its RGBA64At fast path;
		// the result must equal that of a plain upright copy.
		p := Preprocess{Channels: 3, Height: 12, Width: 20, Mean: []float32{0, 0, 0}, Std: []float32{1, 1, 1}}
		copied := image.NewRGBA64(img.Bounds())
		for y := 0; y < copied.Rect.Dy(); y++ {
			for x := 0; x < copied.Rect.Dx(); x++ {
				copied.Set(x, y, img.At(x, y))
			}
		}
		if a, b := p.Pixels(img), p.Pixels(copied); string(a) != string(b) {
			t.Errorf("%s: preprocessing the view differs from preprocessing a copy", path)
		}
	}
}

// exifJPEG returns the start of a JPEG (SOI, an APP0 segment, then an APP1
// EXIF segment holding tiff) as far as the frame header.
func exifJPEG(tiff []byte) []byte {
	b := []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00}
	seg := append([]byte("Exif\x00\x00"), tiff...)
	b = append(b, 0xff, 0xe1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(seg)+2))
	b = append(b, seg...)
	return append(b, 0xff, 0xc0, 0x00, 0x11)
}

// exifTIFF returns a TIFF header and first IFD in byte order order with
// the given entries (tag, type, count, value), value in the entry's first
// bytes as its type says.
func exifTIFF(order binary.AppendByteOrder, entries ...[4]uint32) []byte {
	b := []byte("II")
	if order == binary.AppendByteOrder(binary.BigEndian) {
		b = []byte("MM")
	}
	b = order.AppendUint16(b, 42)
	b = order.AppendUint32(b, 8)
	b = order.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = order.AppendUint16(b, uint16(e[0]))
		b = order.AppendUint16(b, uint16(e[1]))
		b = order.AppendUint32(b, e[2])
		if e[1] == 3 {
			b = order.AppendUint16(b, uint16(e[3]))
			b = order.AppendUint16(b, 0)
		} else {
			b = order.AppendUint32(b, e[3])
		}
	}
	return order.AppendUint32(b, 0)
}

// TestJPEGOrientationParsing reads the tag in both byte orders, as SHORT
// and LONG, after other tags and fill bytes, and falls back to 1 on
// everything a browser ignores.
func TestJPEGOrientationParsing(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	trunc := exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 1, 6}))
	badOffset := exifTIFF(le, [4]uint32{0x0112, 3, 1, 6})
	le.PutUint32(badOffset[4:], 1<<31)
	cases := []struct {
		name string
		b    []byte
		want int
	}{
		{"little-endian SHORT", exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 1, 6})), 6},
		{"big-endian SHORT", exifJPEG(exifTIFF(be, [4]uint32{0x0112, 3, 1, 8})), 8},
		{"LONG", exifJPEG(exifTIFF(be, [4]uint32{0x0112, 4, 1, 3})), 3},
		{"after other tags", exifJPEG(exifTIFF(le, [4]uint32{0x010f, 2, 4, 0}, [4]uint32{0x0110, 2, 4, 0}, [4]uint32{0x0112, 3, 1, 5})), 5},
		{"fill bytes before the marker", append([]byte{0xff, 0xd8, 0xff, 0xff}, exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 1, 7}))[3:]...), 7},
		{"no EXIF", []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11}, 1},
		{"no orientation tag", exifJPEG(exifTIFF(le, [4]uint32{0x010f, 2, 4, 0})), 1},
		{"value 9", exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 1, 9})), 1},
		{"value 0", exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 1, 0})), 1},
		{"count 2", exifJPEG(exifTIFF(le, [4]uint32{0x0112, 3, 2, 6})), 1},
		{"truncated segment", trunc[:len(trunc)-12], 1},
		{"IFD offset outside", exifJPEG(badOffset), 1},
		{"bad byte order", exifJPEG(append([]byte("XX"), exifTIFF(le, [4]uint32{0x0112, 3, 1, 6})[2:]...)), 1},
		{"bad magic", exifJPEG(append([]byte("II\x2b\x00"), exifTIFF(le, [4]uint32{0x0112, 3, 1, 6})[4:]...)), 1},
		{"not a JPEG", []byte("\x89PNG\r\n\x1a\n"), 1},
		{"empty", nil, 1},
	}
	for _, c := range cases {
		if got := jpegOrientation(c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// plainImage hides every method of its image but image.Image's three, so
// orient's view must fall back to At.
type plainImage struct{ image.Image }

// TestOrientedView checks the view against turns written out by hand, for
// a source whose bounds do not start at (0, 0), with and without the
// source's RGBA64At; orientation 1 returns the source itself.
func TestOrientedView(t *testing.T) {
	// A 3x2 source at (5, 7): value 10*row + column in the red channel.
	src := image.NewNRGBA(image.Rect(5, 7, 8, 9))
	for y := 0; y < 2; y++ {
		for x := 0; x < 3; x++ {
			src.Set(5+x, 7+y, color.NRGBA{R: uint8(10*y + x), A: 255})
		}
	}
	if orient(src, 1) != image.Image(src) {
		t.Errorf("orientation 1 does not return the image itself")
	}
	want := map[int][]string{
		2: {"2 1 0", "12 11 10"},
		3: {"12 11 10", "2 1 0"},
		4: {"10 11 12", "0 1 2"},
		5: {"0 10", "1 11", "2 12"},
		6: {"10 0", "11 1", "12 2"},
		7: {"12 2", "11 1", "10 0"},
		8: {"2 12", "1 11", "0 10"},
	}
	for o, rows := range want {
		for _, s := range []image.Image{src, plainImage{src}} {
			img := orient(s, o)
			b := img.Bounds()
			if b.Min != (image.Point{}) || b.Dy() != len(rows) {
				t.Errorf("orientation %d: bounds %v, want %d rows from (0, 0)", o, b, len(rows))
				continue
			}
			for y, row := range rows {
				got := ""
				for x := 0; x < b.Dx(); x++ {
					r, _, _, _ := img.At(x, y).RGBA()
					if x > 0 {
						got += " "
					}
					got += fmt.Sprint(r >> 8)
					if v, ok := img.(image.RGBA64Image); ok && uint32(v.RGBA64At(x, y).R) != r {
						t.Errorf("orientation %d (%d, %d): RGBA64At %d, At %d", o, x, y, v.RGBA64At(x, y).R, r)
					}
				}
				if got != row {
					t.Errorf("orientation %d row %d: %q, want %q", o, y, got, row)
				}
			}
			if _, _, _, a := img.At(b.Max.X, 0).RGBA(); a != 0 {
				t.Errorf("orientation %d: a pixel outside the bounds is not transparent", o)
			}
		}
	}
}
