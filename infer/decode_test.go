package infer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// goRoot is the Go installation whose testdata (pngsuite, JPEG kinds) the
// tests read.
func goRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// xImageTestdata is golang.org/x/image's testdata directory in the module
// cache: real BMP, TIFF and WebP files with PNG references.
func xImageTestdata(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/image").Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/image: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "testdata")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rgbPreprocess and grayPreprocess are manifest-like settings: the 3-channel
// one resizes every test image to 32x32, the 1-channel one to 28x28 with
// the Fashion-MNIST normalisation.
var (
	rgbPreprocess  = imaging.Preprocess{Channels: 3, Height: 32, Width: 32, Mean: []float32{0.5, 0.5, 0.5}, Std: []float32{0.25, 0.25, 0.25}, Resize: imaging.ResizeCatmullRom}
	grayPreprocess = imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.2860}, Std: []float32{0.3530}, Resize: imaging.ResizeCatmullRom}
)

// checkPreprocessed fails unless x is a finite network input for p.
func checkPreprocessed(t *testing.T, name string, p imaging.Preprocess, x []float32) {
	t.Helper()
	if len(x) != p.ImageSize() {
		t.Fatalf("%s: preprocessed to %d values, want %d", name, len(x), p.ImageSize())
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s: value %d is %v", name, i, v)
		}
	}
}

// meanAbsDiff is the mean absolute difference of two equal-length inputs.
func meanAbsDiff(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i] - b[i]))
	}
	return s / float64(len(a))
}

func TestDecodePNGSuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goRoot(t), "src/image/png/testdata/pngsuite/*.png"))
	if err != nil || len(files) < 30 {
		t.Fatalf("pngsuite: %d files, %v", len(files), err)
	}
	for i, path := range files {
		img, format, err := imaging.DecodeImage(bytes.NewReader(readFile(t, path)), DefaultMaxPixels)
		if err != nil {
			t.Errorf("case %d %s: %v", i, filepath.Base(path), err)
			continue
		}
		if format != "png" {
			t.Errorf("case %d %s: format %q", i, filepath.Base(path), format)
		}
		checkPreprocessed(t, filepath.Base(path), rgbPreprocess, rgbPreprocess.Image(img))
		checkPreprocessed(t, filepath.Base(path), grayPreprocess, grayPreprocess.Image(img))
	}
}

// pngChunk returns one PNG chunk with its CRC.
func pngChunk(typ string, payload []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(len(payload)))
	b.WriteString(typ)
	b.Write(payload)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), payload...)))
	return b.Bytes()
}

// pngHeader returns a PNG signature and an IHDR chunk declaring a w x h
// 8-bit RGB image, with valid CRCs: what a decompression bomb starts with.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // bit depth 8, colour type RGB
	return append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecodeBrokenFiles(t *testing.T) {
	good := readFile(t, filepath.Join(goRoot(t), "src/image/png/testdata/pngsuite/basn2c08.png"))
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-20] ^= 0xff // inside the last IDAT's data
	jpeg := readFile(t, filepath.Join(goRoot(t), "src/image/testdata/video-001.jpeg"))
	zeroWidth := pngHeader(0, 10)
	cases := []struct {
		name string
		data []byte
		want error  // sentinel the error must wrap, or nil for any error
		text string // the message must contain it
	}{
		{"empty", nil, nil, "empty image data"},
		{"text", []byte("this is not an image at all"), image.ErrFormat, "unknown image format"},
		{"png signature only", good[:8], nil, "png"},
		{"png truncated in IHDR", good[:20], nil, "corrupt png header"},
		{"png truncated in IDAT", good[:len(good)/2], nil, "truncated or corrupt png image"},
		{"png bad crc", badCRC, nil, "png"},
		{"png zero width", zeroWidth, nil, "png"},
		{"jpeg truncated", jpeg[:len(jpeg)/3], nil, "truncated or corrupt jpeg image"},
		{"jpeg header only", jpeg[:200], nil, "jpeg"},
	}
	for i, c := range cases {
		img, _, err := imaging.DecodeImage(bytes.NewReader(c.data), DefaultMaxPixels)
		if err == nil {
			t.Errorf("case %d %s: decoded a %v image, want an error", i, c.name, img.Bounds())
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("case %d %s: error %q does not wrap %v", i, c.name, err, c.want)
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("case %d %s: error %q does not mention %q", i, c.name, err, c.text)
		}
		if err.Error() != strings.ToLower(err.Error()[:1])+err.Error()[1:] {
			t.Errorf("case %d %s: error %q is not lowercase", i, c.name, err)
		}
	}
}

// TestDecodeBombRejectedBeforeDecoding feeds headers that declare huge
// images and checks they are refused from the header alone: the error wraps
// imaging.ErrTooLarge and decoding allocated next to nothing (a decoded
// 100000x100000 RGB image would need 30 GB).
func TestDecodeBombRejectedBeforeDecoding(t *testing.T) {
	gifBomb := []byte("GIF89a\xff\xff\xff\xff\x00\x00\x00")
	jpegBomb := func() []byte {
		// SOI, a JFIF APP0 (so the colour model is known from the header),
		// then a baseline SOF0 declaring 65500x65500, 3 components.
		b := []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00}
		return append(b, 0xff, 0xc0, 0x00, 0x11, 0x08, 0xff, 0xdc, 0xff, 0xdc, 0x03,
			0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01)
	}()
	cases := []struct {
		name string
		data []byte
	}{
		{"png 100000x100000", append(pngHeader(100000, 100000), pngChunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00})...)},
		{"png 1x2000000000", pngHeader(1, 2000000000)},
		{"gif 65535x65535", gifBomb},
		{"jpeg 65500x65500", jpegBomb},
	}
	for i, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := imaging.DecodeImage(bytes.NewReader(c.data), DefaultMaxPixels)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, imaging.ErrTooLarge) {
			t.Errorf("case %d %s: error %v, want imaging.ErrTooLarge", i, c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), "more than the limit") {
			t.Errorf("case %d %s: error %q does not explain the limit", i, c.name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("case %d %s: allocated %d bytes before refusing", i, c.name, alloc)
		}
	}
	// The limit is configurable and inclusive.
	small := encodePNG(t, image.NewGray(image.Rect(0, 0, 10, 10)))
	if _, _, err := imaging.DecodeImage(bytes.NewReader(small), 100); err != nil {
		t.Errorf("10x10 with limit 100: %v", err)
	}
	if _, _, err := imaging.DecodeImage(bytes.NewReader(small), 99); !errors.Is(err, imaging.ErrTooLarge) {
		t.Errorf("10x10 with limit 99: %v, want imaging.ErrTooLarge", err)
	}
}

// TestDecodeFormatsMatchReference decodes real files of every supported
// format and colour model and checks each preprocesses to nearly the same
// network input as a PNG of the same picture, so a wrong colour conversion
// (CMYK, YCbCr subsampling, 16-bit, palette) would show.
func TestDecodeFormatsMatchReference(t *testing.T) {
	std := filepath.Join(goRoot(t), "src/image/testdata")
	x := xImageTestdata(t)
	cases := []struct {
		file, reference string
		tolerance       float64 // mean |difference| in normalised units (1 unit = 64 grey levels at std 0.25)
	}{
		{std + "/video-001.jpeg", std + "/video-001.png", 0.05},
		{std + "/video-001.q50.420.jpeg", std + "/video-001.png", 0.1},
		{std + "/video-001.q50.444.jpeg", std + "/video-001.png", 0.1},
		{std + "/video-001.q50.411.progressive.jpeg", std + "/video-001.png", 0.1},
		{std + "/video-001.progressive.jpeg", std + "/video-001.png", 0.05},
		{std + "/video-001.cmyk.jpeg", std + "/video-001.cmyk.png", 0.05},
		{std + "/video-001.rgb.jpeg", std + "/video-001.rgb.png", 0.05},
		{std + "/video-001.restart2.jpeg", std + "/video-001.png", 0.05},
		{std + "/video-005.gray.jpeg", std + "/video-005.gray.png", 0.05},
		{std + "/video-005.gray.q50.2x2.progressive.jpeg", std + "/video-005.gray.png", 0.1},
		{std + "/video-001.gif", std + "/video-001.png", 0.1},
		{std + "/video-001.interlaced.gif", std + "/video-001.png", 0.1},
		{std + "/video-005.gray.gif", std + "/video-005.gray.png", 0.05},
		{x + "/video-001.bmp", x + "/video-001.png", 0.01},
		{x + "/bmp_4bpp.bmp", x + "/bmp_4bpp.png", 0.01},
		{x + "/video-001.tiff", x + "/video-001.png", 0.01},
		{x + "/video-001-16bit.tiff", x + "/video-001.png", 0.01},
		{x + "/video-001-gray-16bit.tiff", x + "/video-001-gray.tiff", 0.01},
		{x + "/video-001-paletted.tiff", x + "/video-001.png", 0.1},
		{x + "/video-001-tile-64x64.tiff", x + "/video-001.png", 0.01},
		{x + "/video-001.lossy.webp", x + "/video-001.png", 0.2}, // lossy at low quality: about 10 grey levels off on average
		{x + "/tux.lossless.webp", x + "/tux.png", 0.01},
		{x + "/gopher-doc.with-alpha.lossless.webp", x + "/gopher-doc.with-alpha.png", 0.01},
	}
	decode := func(path string) image.Image {
		img, _, err := imaging.DecodeImage(bytes.NewReader(readFile(t, path)), DefaultMaxPixels)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		return img
	}
	for i, c := range cases {
		got, want := decode(c.file), decode(c.reference)
		if got.Bounds() != want.Bounds() {
			t.Errorf("case %d %s: bounds %v, reference %v", i, filepath.Base(c.file), got.Bounds(), want.Bounds())
			continue
		}
		for _, p := range []imaging.Preprocess{rgbPreprocess, grayPreprocess} {
			a, b := p.Image(got), p.Image(want)
			checkPreprocessed(t, c.file, p, a)
			if d := meanAbsDiff(a, b); d > c.tolerance {
				t.Errorf("case %d %s: %d-channel input differs from %s by %.4f on average, want <= %v",
					i, filepath.Base(c.file), p.Channels, filepath.Base(c.reference), d, c.tolerance)
			}
		}
	}
}

func TestDecodeTruncatedProgressiveJPEG(t *testing.T) {
	// Go's own testdata: a progressive JPEG cut short. Go decodes the scans
	// it has; either outcome is fine as long as it is not a panic and an
	// image comes back whole or an error names the format.
	path := filepath.Join(goRoot(t), "src/image/testdata/video-001.progressive.truncated.jpeg")
	img, _, err := imaging.DecodeImage(bytes.NewReader(readFile(t, path)), DefaultMaxPixels)
	if err != nil {
		if !strings.Contains(err.Error(), "jpeg") {
			t.Errorf("error %q does not name the format", err)
		}
		return
	}
	checkPreprocessed(t, filepath.Base(path), rgbPreprocess, rgbPreprocess.Image(img))
}

func TestDecodeColourModels(t *testing.T) {
	r := image.Rect(0, 0, 5, 3)
	pal := image.NewPaletted(r, color.Palette{color.Black, color.RGBA{200, 10, 10, 255}})
	pal.SetColorIndex(1, 1, 1)
	rgba64 := image.NewRGBA64(r)
	rgba64.SetRGBA64(2, 2, color.RGBA64{0xffff, 0x8000, 0, 0xffff})
	nrgba := image.NewNRGBA(r)
	nrgba.SetNRGBA(0, 0, color.NRGBA{255, 0, 0, 128})
	cases := []struct {
		name string
		img  image.Image
	}{
		{"gray", image.NewGray(r)},
		{"gray16", image.NewGray16(r)},
		{"paletted", pal},
		{"rgba64", rgba64},
		{"nrgba half alpha", nrgba},
		{"alpha16", image.NewAlpha16(r)},
	}
	for i, c := range cases {
		img, _, err := imaging.DecodeImage(bytes.NewReader(encodePNG(t, c.img)), DefaultMaxPixels)
		if err != nil {
			t.Errorf("case %d %s: %v", i, c.name, err)
			continue
		}
		if img.Bounds() != r {
			t.Errorf("case %d %s: bounds %v, want %v", i, c.name, img.Bounds(), r)
		}
		checkPreprocessed(t, c.name, rgbPreprocess, rgbPreprocess.Image(img))
	}
}

func TestIsImageFile(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"a.png", true}, {"B.JPG", true}, {"c.jpeg", true}, {"d.Gif", true}, {"e.bmp", true},
		{"f.tif", true}, {"g.TIFF", true}, {"h.webp", true}, {"notes.txt", false}, {"png", false}, {"archive.png.gz", false},
	}
	for i, c := range cases {
		if got := imaging.IsImageFile(c.name); got != c.want {
			t.Errorf("case %d %s: %v, want %v", i, c.name, got, c.want)
		}
	}
}

// FuzzDecodeImage checks that no byte string makes imaging.DecodeImage panic; its
// seeds run with every `go test`.
func FuzzDecodeImage(f *testing.F) {
	f.Add([]byte{})
	f.Add(pngHeader(3, 3))
	f.Add([]byte("GIF89a\x02\x00\x02\x00\x00\x00\x00;"))
	f.Add([]byte("BM\x00\x00"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Add([]byte("II*\x00\x08\x00\x00\x00"))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x02, 0x00, 0x02, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		img, _, err := imaging.DecodeImage(bytes.NewReader(b), 1<<16)
		if err == nil && img.Bounds().Empty() {
			t.Errorf("decoded an empty image without error")
		}
	})
}
