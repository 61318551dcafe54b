package imaging

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// libjxlTestdata is where Debian's libjxl-testdata puts its images.
const libjxlTestdata = "/usr/share/libjxl-testdata"

// pixelDiff summarises |ours - reference| over the 8-bit RGBA samples of
// one image.
type pixelDiff struct {
	mean float64
	p99  int // 99th percentile
	max  int
}

// diffRGBA compares img, converted to 8-bit non-premultiplied RGBA, with
// ref (width*height*4 bytes).
func diffRGBA(img image.Image, ref []byte) pixelDiff {
	b := img.Bounds()
	var hist [256]int
	var sum float64
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			i := 4 * ((y-b.Min.Y)*b.Dx() + (x - b.Min.X))
			for k, v := range []uint8{c.R, c.G, c.B, c.A} {
				if k < 3 && c.A == 0 && ref[i+3] == 0 {
					continue // fully transparent: the colour is not defined
				}
				d := int(v) - int(ref[i+k])
				d = max(d, -d)
				hist[d]++
				sum += float64(d)
				n++
			}
		}
	}
	var out pixelDiff
	out.mean = sum / float64(max(n, 1))
	seen := 0
	for d, c := range hist {
		if c > 0 {
			out.max = d
		}
		if seen < (99*n+99)/100 {
			out.p99 = d
		}
		seen += c
	}
	return out
}

// referenceDecode runs testdata/pillow_rgba.py over paths and calls f with
// each image's size, Pillow mode and RGBA bytes, in order.
func referenceDecode(t *testing.T, paths []string, f func(path string, w, h int, mode string, rgba []byte)) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "testdata/pillow_rgba.py")
	cmd.Args = append(cmd.Args, paths...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("reference decoder: %v (Debian's python3-pil on /usr/bin/python3)", err)
	}
	r := bufio.NewReader(stdout)
	for _, p := range paths {
		var w, h int
		var mode string
		if _, err := fmt.Fscanf(r, "%d %d %s\n", &w, &h, &mode); err != nil {
			t.Fatalf("reference decoder, %s: %v", p, err)
		}
		rgba := make([]byte, 4*w*h)
		if _, err := io.ReadFull(r, rgba); err != nil {
			t.Fatalf("reference decoder, %s: %v", p, err)
		}
		f(p, w, h, mode, rgba)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reference decoder: %v", err)
	}
}

// Tolerances of TestDecodeMatchesPillow, on 8-bit samples. PNG is
// lossless and decoded with integers: the same values. JPEG decoders
// legitimately differ: Go's image/jpeg replicates chroma samples where
// libjpeg (Pillow) interpolates them ("fancy upsampling"), and the two
// IDCTs round differently. The JPEGs Go refuses are decoded by
// libjpeg-turbo, the library Pillow uses, with its defaults: the same
// values (its SIMD and C paths are bit-exact by design). Measured over
// libjxl-testdata 0.0~git20230110 on 2026-11-26, the largest over its
// files: PNG 0; libjpeg-turbo 0; JPEGs Go decodes mean 0.678, 99th
// percentile 5, max 28 (at sharp colour edges of subsampled images). The
// limits leave a margin over those numbers.
var decodeTolerance = map[string]pixelDiff{
	"png":          {mean: 0, p99: 0, max: 0},
	"jpeg":         {mean: 1.5, p99: 8, max: 48},
	"jpeg-libjpeg": {mean: 0.01, p99: 0, max: 1},
}

// TestDecodeMatchesPillow decodes every JPEG and PNG of Debian's
// libjxl-testdata (scripts/setup.sh installs it) with DecodeImage and
// compares the pixels with Pillow's (issue 33, item 1): every one must
// decode, within decodeTolerance. The JPEGs of sampling factors Go's
// image/jpeg refuses (flower.png.im_q85_asymmetric, _luma_subsample,
// _rgb_subsample_blue) go through libjpeg-turbo.
func TestDecodeMatchesPillow(t *testing.T) {
	var paths []string
	err := filepath.WalkDir(libjxlTestdata, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".png", ".jpg", ".jpeg":
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v: install Debian's libjxl-testdata (scripts/setup.sh does)", err)
	}
	sort.Strings(paths)
	if len(paths) < 84 {
		t.Fatalf("%d JPEG and PNG files in %s, want the package's 84", len(paths), libjxlTestdata)
	}
	kinds := matchPillow(t, paths, decodeTolerance)
	if kinds["jpeg-libjpeg"] != 3 || kinds["jpeg"] != 15 || kinds["png"] != 66 {
		t.Errorf("decoded %v, want 3 JPEGs by libjpeg-turbo, 15 by Go, 66 PNGs", kinds)
	}
}

// TestDecodeSamplingFactors decodes the small JPEGs of testdata/sampling
// (made by its make.sh with cjpeg, committed so the test needs no
// package): every sampling Go's image/jpeg refuses decodes through
// libjpeg-turbo, bit-exact with Pillow, and the others through Go as
// before.
func TestDecodeSamplingFactors(t *testing.T) {
	paths, err := filepath.Glob("testdata/sampling/*.jpg")
	if err != nil || len(paths) != 7 {
		t.Fatalf("%d files, %v", len(paths), err)
	}
	// The image's sharp colour edges every 16 pixels are where chroma
	// replication and interpolation differ most: measured 2026-11-26, Go's
	// decodes differ from Pillow's by mean 3.8, p99 42, max 68.
	tolerance := maps.Clone(decodeTolerance)
	tolerance["jpeg"] = pixelDiff{mean: 6, p99: 64, max: 96}
	kinds := matchPillow(t, paths, tolerance)
	if kinds["jpeg-libjpeg"] != 3 || kinds["jpeg"] != 4 {
		t.Errorf("decoded %v, want 3 by libjpeg-turbo and 4 by Go", kinds)
	}
}

// TestDecodeUnsupportedJPEG: a JPEG neither decoder implements (a lossless
// SOF3 frame, which libjpeg-turbo reads only from version 3) is called
// unsupported, not corrupt.
func TestDecodeUnsupportedJPEG(t *testing.T) {
	b, err := os.ReadFile("testdata/sampling/440.jpg")
	if err != nil {
		t.Fatal(err)
	}
	sof := bytes.Index(b, []byte{0xff, 0xc0})
	if sof < 0 {
		t.Fatal("no SOF0 marker")
	}
	b[sof+1] = 0xc3
	_, _, err = DecodeImage(bytes.NewReader(b), MaxImagePixels)
	t.Logf("%v", err)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrFormat) || strings.Contains(err.Error(), "corrupt") {
		t.Errorf("error %v, want ErrUnsupported and no word of corruption", err)
	}
}

// matchPillow decodes paths with DecodeImage, compares each with Pillow
// within tolerance, and counts the files by kind: png, jpeg (Go's
// decoder), jpeg-libjpeg (refused by Go, decoded by libjpeg-turbo).
func matchPillow(t *testing.T, paths []string, tolerance map[string]pixelDiff) map[string]int {
	t.Helper()
	worst := map[string]pixelDiff{}
	kinds := map[string]int{}
	referenceDecode(t, paths, func(p string, w, h int, mode string, ref []byte) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, format, err := DecodeImage(f, MaxImagePixels)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return
		}
		if got := img.Bounds().Size(); got.X != w || got.Y != h {
			t.Errorf("%s: %v, Pillow %dx%d", p, got, w, h)
			return
		}
		kind := format
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if _, err := jpeg.DecodeConfig(f); format == "jpeg" && isUnsupportedJPEG(err) {
			kind = "jpeg-libjpeg"
		}
		kinds[kind]++
		d := diffRGBA(img, ref)
		tol, ok := tolerance[kind]
		if !ok {
			t.Errorf("%s: format %s has no tolerance", p, kind)
			return
		}
		w0 := worst[kind]
		worst[kind] = pixelDiff{mean: max(w0.mean, d.mean), p99: max(w0.p99, d.p99), max: max(w0.max, d.max)}
		if d.mean > tol.mean || d.p99 > tol.p99 || d.max > tol.max {
			t.Errorf("%s (%s, %T): differs from Pillow by mean %.3f, p99 %d, max %d; tolerance %+v", p, kind, img, d.mean, d.p99, d.max, tol)
		}
	})
	for kind, d := range worst {
		t.Logf("%s (%d files): largest differences from Pillow: mean %.3f, p99 %d, max %d", kind, kinds[kind], d.mean, d.p99, d.max)
	}
	return kinds
}

// TestDecodeJPEGTurboDamaged feeds libjpeg-turbo damaged copies of the
// JPEGs only it decodes: random bytes changed, and cuts at every length.
// Each must come back as an image or an error wrapping ErrFormat, never a
// crash (libjpeg's errors and warnings return through the error manager
// of jpegturbo.go) nor a grey-filled image of a truncated file.
func TestDecodeJPEGTurboDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	for _, name := range []string{"asymmetric", "luma-subsampled", "rgb-blue-subsampled"} {
		b, err := os.ReadFile(filepath.Join("testdata", "sampling", name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		for cut := 0; cut < len(b); cut += 7 {
			_, _, err := DecodeImage(bytes.NewReader(b[:cut]), MaxImagePixels)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut at %d of %d bytes: %v, want ErrFormat", name, cut, len(b), err)
			}
		}
		for i := range 300 {
			d := bytes.Clone(b)
			for range 1 + rng.IntN(8) {
				d[rng.IntN(len(d))] = byte(rng.IntN(256))
			}
			if _, _, err := DecodeImage(bytes.NewReader(d), MaxImagePixels); err != nil && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s damaged copy %d: %v, want an image or ErrFormat", name, i, err)
			}
		}
	}
}
