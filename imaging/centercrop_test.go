package imaging

import (
	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/internal/imagetest"

	"encoding/json"
	"errors"
	"image"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/draw"
)

// TestCenterCropPixels: center-crop preprocessing computes only the window
// but equals resizing the whole image and cropping; an image already of the
// resize size is cropped without resampling; and a wide photo is cropped,
// not squashed.
func TestCenterCropPixels(t *testing.T) {
	p := Preprocess{Channels: 3, Height: 24, Width: 20, ResizeMode: arch.CenterCrop, ResizeShorter: 27}
	for _, size := range []image.Point{{40, 30}, {56, 72}, {27, 27}, {110, 28}} {
		src := imagetest.Gradient(size.X, size.Y, 5)
		got := p.Pixels(src)
		nw, nh := ShorterSideSize(size.X, size.Y, 27)
		whole := image.NewRGBA64(image.Rect(0, 0, nw, nh))
		draw.CatmullRom.Scale(whole, whole.Bounds(), Composite(src, [3]uint8{}), src.Bounds(), draw.Src, nil)
		if size == (image.Point{27, 27}) {
			whole = Composite(src, [3]uint8{})
		}
		win := CenterCropWindow(nw, nh, 20, 24)
		want := make([]uint8, p.ImageSize())
		toCHW(whole.SubImage(win).(*image.RGBA64), 3, want)
		if !slices.Equal(got, want) {
			t.Errorf("%v: window pixels differ from resize-then-crop", size)
		}
	}
	// Squash keeps today's output exactly.
	src := imagetest.Gradient(40, 30, 1)
	squash := Preprocess{Channels: 3, Height: 24, Width: 20, ResizeMode: arch.Squash}
	if !slices.Equal(squash.Pixels(src), Preprocess{Channels: 3, Height: 24, Width: 20}.Pixels(src)) {
		t.Error("explicit squash differs from the empty mode")
	}

	// A 640x480 photo: left and right eighths black, the middle white.
	// The 32x32 center crop of its 42x32 resize (ratio 0.75) sees white
	// only; squashing it would bring the black bands in.
	photo := image.NewGray(image.Rect(0, 0, 640, 480))
	for i := range photo.Pix {
		if x := i % 640; x >= 80 && x < 560 {
			photo.Pix[i] = 255
		}
	}
	crop := Preprocess{Channels: 1, Height: 32, Width: 32, ResizeMode: arch.CenterCrop, ResizeShorter: CenterCropResize(32, 0.75)}
	if got := crop.Pixels(photo); slices.Min(got) < 250 {
		t.Errorf("center crop of the 640x480 photo has a pixel of %d, want only the white middle", slices.Min(got))
	}
	if got := (Preprocess{Channels: 1, Height: 32, Width: 32}).Pixels(photo); got[0] != 0 {
		t.Errorf("squash of the photo: corner %d, want the black band", got[0])
	}
}

func TestCenterCropResize(t *testing.T) {
	for i, c := range []struct {
		side  int
		ratio float64
		want  int
	}{{224, 0.875, 256}, {64, 0.875, 73}, {64, 1, 64}, {28, 0.875, 32}, {32, 0.875, 36}, {299, 0.875, 341}} {
		if got := CenterCropResize(c.side, c.ratio); got != c.want {
			t.Errorf("case %d: CenterCropResize(%d, %v) = %d, want %d", i, c.side, c.ratio, got, c.want)
		}
	}
}

func TestPreprocessResizeModeValidate(t *testing.T) {
	base := Preprocess{Channels: 1, Height: 24, Width: 20, Mean: []float32{0}, Std: []float32{1}}
	for i, c := range []struct {
		mode    arch.ResizeMode
		shorter int
		msg     string // "" means valid
	}{
		{"", 0, ""}, {arch.Squash, 0, ""}, {arch.CenterCrop, 24, ""}, {arch.CenterCrop, 8192, ""},
		{arch.Squash, 32, "resize_shorter 32 with resize mode squash"},
		{arch.CenterCrop, 23, "resize_shorter 23 for a 24x20 center crop"},
		{arch.CenterCrop, 0, "resize_shorter 0"},
		{arch.CenterCrop, 9000, "resize_shorter 9000"},
		{"letterbox", 0, `resize mode "letterbox"`},
	} {
		p := base
		p.ResizeMode, p.ResizeShorter = c.mode, c.shorter
		err := p.Validate()
		if (c.msg == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrPreprocess) || !strings.Contains(err.Error(), c.msg))) {
			t.Errorf("case %d: %q %d: got %v, want %q", i, c.mode, c.shorter, err, c.msg)
		}
	}
}

// TestPreprocessJSONModes: center-crop is written with its resize size; an
// explicit squash is written too; the empty mode (a manifest written
// before modes existed) reads back as squash's behaviour.
func TestPreprocessJSONModes(t *testing.T) {
	p := Preprocess{Channels: 3, Height: 224, Width: 224, Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225},
		Resize: ResizeCatmullRom, ResizeMode: arch.CenterCrop, ResizeShorter: 256}
	raw, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(raw), `"resize":"catmull-rom","resize_mode":"center-crop","resize_shorter":256,`) {
		t.Fatalf("center-crop json %s (%v)", raw, err)
	}
	var back Preprocess
	if err := json.Unmarshal(raw, &back); err != nil || back.ResizeMode != arch.CenterCrop || back.ResizeShorter != 256 || back.Validate() != nil {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	p.ResizeMode, p.ResizeShorter = arch.Squash, 0
	if raw, _ := json.Marshal(p); !strings.Contains(string(raw), `"resize_mode":"squash","background"`) {
		t.Errorf("squash json %s", raw)
	}
}

// TestCenterCropLongStrip: a 20000x5 strip is cropped around its centre
// to 4:1 (20x5) before the shorter-side resize, so preprocessing it needs a
// small resampling buffer; here that centre is a uniform band, so the crop
// is uniform too. Images up to 4:1 are not cropped first.
func TestCenterCropLongStrip(t *testing.T) {
	strip := image.NewGray(image.Rect(0, 0, 20000, 5))
	for i := range strip.Pix {
		if x := i % 20000; x >= 9990 && x < 10010 {
			strip.Pix[i] = 200
		}
	}
	p := Preprocess{Channels: 1, Height: 16, Width: 16, ResizeMode: arch.CenterCrop, ResizeShorter: 256}
	if got := p.Pixels(strip); slices.Min(got) != 200 || slices.Max(got) != 200 {
		t.Errorf("strip centre: values %d..%d, want the band's 200", slices.Min(got), slices.Max(got))
	}
	for _, c := range []struct{ in, want image.Rectangle }{
		{image.Rect(0, 0, 20000, 5), image.Rect(9990, 0, 10010, 5)},
		{image.Rect(3, 4, 13, 104), image.Rect(3, 34, 13, 74)},
		{image.Rect(0, 0, 40, 10), image.Rect(0, 0, 40, 10)},
	} {
		img := image.NewRGBA64(c.in)
		if got := limitAspect(img).Rect; got != c.want {
			t.Errorf("limitAspect(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
