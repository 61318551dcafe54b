package data

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"golang.org/x/image/draw"

	"github.com/bicyc/bicyc/imaging"
)

// ResizedCrop is random-resized-crop augmentation, torchvision's
// RandomResizedCrop(size, scale, ratio): a window of random area and aspect
// ratio is cut from the image and resized to the network's input size. The
// zero value is off; torchvision's defaults are
//
//	Scale = [0.08, 1], Ratio = [3/4, 4/3]
//
// Window sampling (Window) follows torchvision's get_params draw for draw:
// up to 10 attempts of an area fraction uniform in Scale and a log-uniform
// aspect ratio in Ratio, side lengths rounded half to even, accepted when
// the window fits, its top then left offset uniform; after 10 misses, the
// centre crop of the whole image clamped to Ratio. The randomness comes
// from the caller's generator (the Batcher's per-epoch stream), so the
// values drawn differ from torch's, but a run is reproducible from its seed.
//
// Where it differs from torchvision: the window is cut from the image as
// stored at load resolution (Photos: shorter side the load side, not the
// original file), and resized with Catmull-Rom (antialiased when
// shrinking) on 8-bit pixels instead of PIL's bilinear; a window of
// exactly the output size is copied, not resampled, as PIL does.
type ResizedCrop struct {
	Scale [2]float64 `json:"scale"` // area fraction range, 0 < Scale[0] <= Scale[1]
	Ratio [2]float64 `json:"ratio"` // width/height range, 0 < Ratio[0] <= Ratio[1]
}

// DefaultResizedCrop returns torchvision's RandomResizedCrop defaults:
// scale [0.08, 1], ratio [3/4, 4/3].
func DefaultResizedCrop() ResizedCrop {
	return ResizedCrop{Scale: [2]float64{0.08, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3}}
}

// Enabled reports whether r is on (the zero value is off).
func (r ResizedCrop) Enabled() bool { return r != ResizedCrop{} }

// Validate reports a range that is not 0 < lo <= hi and finite, wrapping
// imaging.ErrPreprocess. The zero value (off) is valid.
func (r ResizedCrop) Validate() error {
	if !r.Enabled() {
		return nil
	}
	for _, rg := range []struct {
		name string
		v    [2]float64
	}{{"scale", r.Scale}, {"ratio", r.Ratio}} {
		if !(rg.v[0] > 0 && rg.v[0] <= rg.v[1]) || math.IsInf(rg.v[1], 0) {
			return fmt.Errorf("%w: resized crop %s %v, want 0 < low <= high, finite", imaging.ErrPreprocess, rg.name, rg.v)
		}
	}
	return nil
}

// Window draws the crop window of a w x h image (both >= 1) from rng, as
// described on ResizedCrop.
func (r ResizedCrop) Window(rng *rand.Rand, w, h int) image.Rectangle {
	area := float64(w * h)
	logLo, logHi := math.Log(r.Ratio[0]), math.Log(r.Ratio[1])
	for range 10 {
		target := area * (r.Scale[0] + (r.Scale[1]-r.Scale[0])*rng.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*rng.Float64())
		cw := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if 0 < cw && cw <= w && 0 < ch && ch <= h {
			top := rng.IntN(h - ch + 1)
			left := rng.IntN(w - cw + 1)
			return image.Rect(left, top, left+cw, top+ch)
		}
	}
	cw, ch := w, h
	switch in := float64(w) / float64(h); {
	case in < r.Ratio[0]:
		ch = int(math.RoundToEven(float64(w) / r.Ratio[0]))
	case in > r.Ratio[1]:
		cw = int(math.RoundToEven(float64(h) * r.Ratio[1]))
	}
	top, left := (h-ch)/2, (w-cw)/2
	return image.Rect(left, top, left+cw, top+ch)
}

// Apply draws a window of the c x sh x sw uint8 CHW image src (Window) and
// writes it resized to c x h x w into dst. c must be 1 or 3. An empty src
// gives zeros.
func (r ResizedCrop) Apply(rng *rand.Rand, src []uint8, c, sh, sw int, dst []uint8, h, w int) {
	checkImage("ResizedCrop.Apply", src, src, c, sh, sw)
	checkImage("ResizedCrop.Apply", dst, dst, c, h, w)
	if c != 1 && c != 3 {
		panic(fmt.Sprintf("data: ResizedCrop.Apply: %d channels, want 1 or 3", c))
	}
	if sh < 1 || sw < 1 {
		clear(dst[:c*h*w])
		return
	}
	win := r.Window(rng, sw, sh)
	if win.Dx() == w && win.Dy() == h {
		cropCHW(src, c, sh, sw, win, dst)
		return
	}
	in := chwImage(src, c, sh, sw, win)
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(out, out.Bounds(), in, in.Bounds(), draw.Src, nil)
	plane := h * w
	for i := range plane {
		for ch := range c {
			dst[ch*plane+i] = out.Pix[4*i+ch]
		}
	}
}

// cropCHW copies the window win of the c x sh x sw CHW image src to dst.
func cropCHW(src []uint8, c, sh, sw int, win image.Rectangle, dst []uint8) {
	w := win.Dx()
	for ch := range c {
		for y := range win.Dy() {
			s := (ch*sh+win.Min.Y+y)*sw + win.Min.X
			d := (ch*win.Dy() + y) * w
			copy(dst[d:d+w], src[s:s+w])
		}
	}
}

// chwImage returns the window win of the c x sh x sw CHW image src as an
// opaque Go image with bounds at (0, 0): *image.Gray for one channel,
// *image.RGBA for three.
func chwImage(src []uint8, c, sh, sw int, win image.Rectangle) image.Image {
	w, h := win.Dx(), win.Dy()
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, w, h))
		cropCHW(src, 1, sh, sw, win, g.Pix)
		return g
	}
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	plane := sh * sw
	for y := range h {
		for x := range w {
			s := (win.Min.Y+y)*sw + win.Min.X + x
			d := rgba.Pix[4*(y*w+x) : 4*(y*w+x)+4 : 4*(y*w+x)+4]
			d[0], d[1], d[2], d[3] = src[s], src[plane+s], src[2*plane+s], 0xff
		}
	}
	return rgba
}
