package imaging

import (
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/internal/imagetest"
)

// TestPixelsAlphaComposite checks the documented alpha compositing on a
// decoded RGBA PNG, against the formula and against plain 8-bit arithmetic.
func TestPixelsAlphaComposite(t *testing.T) {
	colours := []color.NRGBA{
		{200, 100, 50, 128}, // half transparent
		{10, 250, 30, 0},    // fully transparent: background
		{1, 2, 3, 255},      // opaque: unchanged
		{255, 255, 255, 64},
	}
	img := image.NewNRGBA(image.Rect(0, 0, len(colours), 1))
	for x, c := range colours {
		img.SetNRGBA(x, 0, c)
	}
	path := filepath.Join(t.TempDir(), "alpha.png")
	imagetest.WritePNG(t, path, img)
	decoded, err := DecodeImageFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, bg := range [][3]uint8{{0, 0, 0}, {255, 255, 255}, {0, 128, 255}} {
		p := Preprocess{Channels: 3, Height: 1, Width: len(colours), Background: bg}
		got := p.Pixels(decoded)
		for x, c := range colours {
			r, g, b, a := c.RGBA()
			for k, v := range []uint32{r, g, b} {
				want := uint8((v + uint32(bg[k])*0x101*(0xffff-a)/0xffff) >> 8)
				approx := (float64([]uint8{c.R, c.G, c.B}[k])*float64(c.A) + float64(bg[k])*(255-float64(c.A))) / 255
				gotV := got[k*len(colours)+x]
				if gotV != want || math.Abs(float64(gotV)-approx) > 1 {
					t.Errorf("case %d: background %v, colour %v channel %d: got %d, want %d (8-bit arithmetic %.2f)", i, bg, c, k, gotV, want, approx)
				}
			}
		}
		if bg == [3]uint8{} {
			// On black, gray conversion equals Go's own GrayModel on the
			// premultiplied colour.
			gp := Preprocess{Channels: 1, Height: 1, Width: len(colours)}
			for x, c := range colours {
				if want := color.GrayModel.Convert(c).(color.Gray).Y; gp.Pixels(decoded)[x] != want {
					t.Errorf("gray of %v: got %d, want %d", c, gp.Pixels(decoded)[x], want)
				}
			}
		}
	}
}

// TestPixelsResize resizes 64x64 images to 28x28 with Catmull-Rom: a
// constant image stays constant, a left-white right-black image keeps its
// halves, and a 28x28 image is never resampled.
func TestPixelsResize(t *testing.T) {
	p := Preprocess{Channels: 1, Height: 28, Width: 28}
	flat := image.NewGray(image.Rect(0, 0, 64, 64))
	halves := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range flat.Pix {
		flat.Pix[i] = 77
		if i%64 < 32 {
			halves.Pix[i] = 255
		}
	}
	got := p.Pixels(flat)
	if len(got) != 28*28 {
		t.Fatalf("resized to %d pixels", len(got))
	}
	for i, v := range got {
		if v != 77 {
			t.Fatalf("constant image: pixel %d is %d, want 77", i, v)
		}
	}
	got = p.Pixels(halves)
	for y := range 28 {
		if got[y*28] != 255 || got[y*28+12] != 255 || got[y*28+15] != 0 || got[y*28+27] != 0 {
			t.Fatalf("halves row %d: %v", y, got[y*28:(y+1)*28])
		}
	}
	// Non-square and upscaling, with an RGB source whose bounds do not
	// start at the origin.
	sub := imagetest.Gradient(40, 30, 3).SubImage(image.Rect(5, 5, 25, 15))
	got = Preprocess{Channels: 3, Height: 28, Width: 28}.Pixels(sub)
	if len(got) != 3*28*28 {
		t.Fatalf("upscaled to %d values", len(got))
	}
	// Same size: exact pass-through of an RGB image.
	src := imagetest.Gradient(28, 28, 9)
	got = Preprocess{Channels: 3, Height: 28, Width: 28}.Pixels(src.SubImage(src.Rect))
	for i := range 28 * 28 {
		for c := range 3 {
			if got[c*784+i] != src.Pix[4*i+c] {
				t.Fatalf("pass-through pixel %d channel %d: %d, want %d", i, c, got[c*784+i], src.Pix[4*i+c])
			}
		}
	}
	if got := p.Pixels(image.NewGray(image.Rectangle{})); len(got) != 784 || slices.Max(got) != 0 {
		t.Errorf("empty image: %d values, max %d", len(got), slices.Max(got))
	}
}

// TestPixelsPNGSuite preprocesses every PNG of Go's own PNG test suite
// (palettes, 16-bit, interlaced, transparency): it decodes or fails with
// ErrFormat, and never panics.
func TestPixelsPNGSuite(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "image", "png", "testdata", "pngsuite", "*.png"))
	if len(paths) == 0 {
		t.Fatal("no pngsuite files in GOROOT")
	}
	p := Preprocess{Channels: 3, Height: 28, Width: 28, Background: [3]uint8{255, 255, 255}}
	decoded := 0
	for i, path := range paths {
		img, err := DecodeImageFile(path)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Errorf("case %d (%s): %v", i, filepath.Base(path), err)
			}
			continue
		}
		if got := p.Pixels(img); len(got) != p.ImageSize() {
			t.Errorf("case %d (%s): %d values", i, filepath.Base(path), len(got))
		}
		decoded++
	}
	t.Logf("%d of %d pngsuite files decoded and preprocessed", decoded, len(paths))
}

func TestNormalizeAndImage(t *testing.T) {
	p := Preprocess{Channels: 3, Height: 1, Width: 2, Mean: []float32{0.5, 0.25, 0}, Std: []float32{0.5, 0.25, 2}}
	pix := []uint8{0, 255, 51, 102, 255, 0, 255, 0, 0, 0, 0, 0}
	dst := make([]float32, len(pix))
	p.Normalize(pix, dst)
	for i, v := range pix {
		c := (i / 2) % 3
		if want := (float32(v)/255 - p.Mean[c]) / p.Std[c]; dst[i] != want {
			t.Errorf("value %d: %v, want %v", i, dst[i], want)
		}
	}
	if dst[0] != -1 || dst[1] != 1 || dst[4] != 0.5 {
		t.Errorf("normalised %v", dst[:6])
	}
	img := image.NewRGBA(image.Rect(0, 0, 2, 1))
	copy(img.Pix, []uint8{0, 51, 255, 255, 255, 102, 0, 255})
	if got := p.Image(img); !slices.Equal(got, dst[:6]) {
		t.Errorf("Image: %v, want %v", got, dst[:6])
	}
}

func TestPreprocessJSON(t *testing.T) {
	p := Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.286}, Std: []float32{0.353}, Resize: ResizeCatmullRom}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"channels":1,"height":28,"width":28,"mean":[0.286],"std":[0.353],"resize":"catmull-rom","background":[0,0,0]}`
	if string(raw) != want {
		t.Fatalf("json %s, want %s", raw, want)
	}
	var back Preprocess
	if err := json.Unmarshal(raw, &back); err != nil || back.Height != 28 || back.Mean[0] != 0.286 || back.Resize != ResizeCatmullRom {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestPreprocessValidate(t *testing.T) {
	ok := Preprocess{Channels: 3, Height: 32, Width: 32, Mean: []float32{0.5, 0.5, 0.5}, Std: []float32{0.2, 0.2, 0.2}}
	nan := float32(math.NaN())
	edit := func(f func(p *Preprocess)) Preprocess {
		p := ok
		p.Mean, p.Std = slices.Clone(ok.Mean), slices.Clone(ok.Std)
		f(&p)
		return p
	}
	cases := []struct {
		p   Preprocess
		msg string // "" means valid
	}{
		{ok, ""},
		{edit(func(p *Preprocess) { p.Resize = ResizeCatmullRom }), ""},
		{edit(func(p *Preprocess) { p.Channels = 2 }), "channels 2"},
		{edit(func(p *Preprocess) { p.Height = 0 }), "size 0x32"},
		{edit(func(p *Preprocess) { p.Width = 100000 }), "size 32x100000"},
		{edit(func(p *Preprocess) { p.Mean = p.Mean[:1] }), "1 mean values for 3 channels"},
		{edit(func(p *Preprocess) { p.Std = nil }), "0 std values"},
		{edit(func(p *Preprocess) { p.Std[1] = 0 }), "std[1] = 0"},
		{edit(func(p *Preprocess) { p.Std[2] = nan }), "std[2] = NaN"},
		{edit(func(p *Preprocess) { p.Mean[0] = float32(math.Inf(1)) }), "mean[0] = +Inf"},
		{edit(func(p *Preprocess) { p.Resize = "bilinear" }), `resize "bilinear"`},
	}
	for i, c := range cases {
		err := c.p.Validate()
		if c.msg == "" {
			if err != nil {
				t.Errorf("case %d: unexpected %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrPreprocess) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("case %d: got %v, want ErrPreprocess mentioning %q", i, err, c.msg)
		}
	}
}

// BenchmarkPixels measures the conversion of a decoded 64x64 RGB image
// to a 32x32 input.
func BenchmarkPixels(b *testing.B) {
	img := imagetest.Gradient(64, 64, 1)
	p := Preprocess{Channels: 3, Height: 32, Width: 32}
	for b.Loop() {
		p.Pixels(img)
	}
}
