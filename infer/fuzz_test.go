package infer

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
)

// The fuzz targets of this package cover the path of an image from a
// request to a Result: imaging.DecodeImage (checked against the training side's
// imaging.DecodeImageFile), preprocessing, and ClassifyReader on a real
// exported bundle. scripts/fuzz.sh runs them for a fixed time; interesting
// inputs live in testdata/fuzz.

// fuzzMaxPixels is the decode limit of the fuzz targets: far below
// DefaultMaxPixels, so that a mutated header declaring a large image costs
// microseconds, not a 64-megapixel allocation per run (which the bomb tests
// of decode_test.go cover).
const fuzzMaxPixels = 1 << 20

// fuzzImageSeeds returns small real image files of every format imaging.DecodeImage
// reads: files from Go's and golang.org/x/image's test data (PNG suite, GIF,
// baseline and progressive JPEG, BMP, TIFF, lossy and lossless WebP), and
// Fashion-MNIST test image 0 as PNG and JPEG.
func fuzzImageSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	goImage := filepath.Join(goRootDir(tb), "src", "image")
	xImage := xImageTestdataDir(tb)
	paths := []string{
		filepath.Join(goImage, "testdata", "triangle-001.gif"),
		filepath.Join(goImage, "testdata", "video-001.q50.420.jpeg"),
		filepath.Join(goImage, "testdata", "video-005.gray.q50.2x2.progressive.jpeg"),
		filepath.Join(xImage, "bmp_1bpp.bmp"),
		filepath.Join(xImage, "yellow_rose-small-v5.bmp"),
		filepath.Join(xImage, "bw-packbits.tiff"),
		filepath.Join(xImage, "no_rps.tiff"),
		filepath.Join(xImage, "gopher-doc.1bpp.lossless.webp"),
		filepath.Join(xImage, "blue-purple-pink.lossy.webp"),
	}
	for _, name := range []string{"basn0g01", "basn2c16", "basn3p02", "basn4a16", "basn6a08"} {
		paths = append(paths, filepath.Join(goImage, "png", "testdata", "pngsuite", name+".png"))
	}
	var seeds [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	dir := data.FashionMNISTDir
	test, err := data.LoadIDX(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	img := fashionImage(test, 0)
	var pngBuf, jpegBuf bytes.Buffer
	if err := png.Encode(&pngBuf, img); err != nil {
		tb.Fatal(err)
	}
	if err := jpeg.Encode(&jpegBuf, img, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return append(seeds, pngBuf.Bytes(), jpegBuf.Bytes())
}

// goRootDir and xImageTestdataDir are goRoot and xImageTestdata of
// decode_test.go for any testing.TB (the fuzz targets hold a *testing.F).
func goRootDir(tb testing.TB) string {
	tb.Helper()
	return goCommand(tb, "env", "GOROOT")
}

func xImageTestdataDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(goCommand(tb, "list", "-m", "-f", "{{.Dir}}", "golang.org/x/image"), "testdata")
}

func goCommand(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		tb.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// checkErrorText checks the error conventions of imaging.DecodeImage: a non-empty,
// lowercase message, and image.ErrFormat only for data in no known format
// (format, when the caller knows it, is the format imaging.DecodeImage reported).
func checkErrorText(t *testing.T, err error, format string) {
	t.Helper()
	msg := err.Error()
	if r, _ := utf8.DecodeRuneInString(msg); msg == "" || unicode.IsUpper(r) {
		t.Fatalf("error %q is empty or not lowercase", msg)
	}
	if errors.Is(err, image.ErrFormat) && format != "" {
		t.Fatalf("error %q wraps image.ErrFormat for known format %q", msg, format)
	}
}

// FuzzDecodeAndPreprocess decodes fuzzed bytes with imaging.DecodeImage and, from a file,
// with the training side's imaging.DecodeImageFile, then preprocesses the
// image with a fuzzed imaging.Preprocess. Invariants: imaging.DecodeImage never
// panics and follows its error conventions; both decoders accept the same
// inputs (below fuzzMaxPixels) and give images that preprocess to the same
// pixels, so inference sees what training saw; Preprocess.Image returns
// Channels*Height*Width finite values.
func FuzzDecodeAndPreprocess(f *testing.F) {
	for i, seed := range fuzzImageSeeds(f) {
		f.Add(seed, i%2 == 1, uint8(27), uint8(27))
	}
	f.Add(pngHeader(3, 3), false, uint8(2), uint8(2))
	f.Add(pngHeader(2000, 2000), true, uint8(0), uint8(0))
	path := filepath.Join(f.TempDir(), "image")
	f.Fuzz(func(t *testing.T, b []byte, rgb bool, h, w uint8) {
		img, format, err := imaging.DecodeImage(bytes.NewReader(b), fuzzMaxPixels)
		if err != nil {
			checkErrorText(t, err, format)
			if errors.Is(err, imaging.ErrTooLarge) {
				return
			}
		} else if !slices.Contains([]string{"png", "jpeg", "gif", "bmp", "tiff", "webp"}, format) || img.Bounds().Empty() {
			t.Fatalf("decoded a %v image of format %q", img.Bounds(), format)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		trained, trainErr := imaging.DecodeImageFile(path)
		if (err == nil) != (trainErr == nil) {
			t.Fatalf("imaging.DecodeImage error %v, but imaging.DecodeImageFile error %v", err, trainErr)
		}
		if err != nil {
			return
		}
		if img.Bounds().Size() != trained.Bounds().Size() {
			t.Fatalf("imaging.DecodeImage gives %v, imaging.DecodeImageFile %v", img.Bounds(), trained.Bounds())
		}
		p := imaging.Preprocess{Channels: 1, Height: 1 + int(h)%32, Width: 1 + int(w)%32, Mean: []float32{0.286}, Std: []float32{0.353}}
		if rgb {
			p = imaging.Preprocess{Channels: 3, Height: p.Height, Width: p.Width, Mean: []float32{0.5, 0.5, 0.5},
				Std: []float32{0.25, 0.25, 0.25}, Background: [3]uint8{255, 255, 255}}
		}
		if !bytes.Equal(p.Pixels(img), p.Pixels(trained)) {
			t.Fatal("inference and training preprocess the same file to different pixels")
		}
		x := p.Image(img)
		if len(x) != p.ImageSize() {
			t.Fatalf("Image gave %d values, want %d", len(x), p.ImageSize())
		}
		for i, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("Image value %d is %v", i, v)
			}
		}
	})
}

// FuzzClassifyReader classifies fuzzed bytes with a real exported bundle
// (the one-task fixture, five classes) on ONNX Runtime, as the server does
// with a request body. Invariants: errors follow DecodeImage's conventions;
// a Result has TopK predictions of distinct manifest classes with finite
// distances, closest first, equal distances in class-column order.
func FuzzClassifyReader(f *testing.F) {
	fx := loadFixture(f)
	for _, seed := range fuzzImageSeeds(f) {
		f.Add(seed)
	}
	c := openCPU(f, fx.oneTask, WithMaxPixels(fuzzMaxPixels))
	column := make(map[int]int)
	for i, cl := range c.Classes() {
		column[cl.ID] = i
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := c.ClassifyReader(context.Background(), bytes.NewReader(b))
		if err != nil {
			checkErrorText(t, err, "")
			return
		}
		if len(res.Predictions) != c.TopK() {
			t.Fatalf("%d predictions, want %d", len(res.Predictions), c.TopK())
		}
		seen := make(map[int]bool)
		for i, p := range res.Predictions {
			col, ok := column[p.ClassID]
			if !ok || seen[p.ClassID] || c.Classes()[col].Name != p.Name || c.Classes()[col].Task != p.Task {
				t.Fatalf("prediction %d %+v is not a distinct class of the manifest", i, p)
			}
			seen[p.ClassID] = true
			if math.IsNaN(float64(p.Distance)) || math.IsInf(float64(p.Distance), 0) {
				t.Fatalf("prediction %d has distance %v", i, p.Distance)
			}
			if i > 0 {
				prev := res.Predictions[i-1]
				if prev.Distance > p.Distance || (prev.Distance == p.Distance && column[prev.ClassID] > col) {
					t.Fatalf("predictions %d and %d are out of order: %+v", i-1, i, res.Predictions)
				}
			}
		}
	})
}
