package imaging

import (
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/bicyc/bicyc/arch"
	"golang.org/x/image/draw"
)

// ResizeCatmullRom names the resize filter of Preprocess:
// golang.org/x/image/draw.CatmullRom, the bicubic Catmull-Rom spline (a = -0.5),
// applied to 16-bit premultiplied colour. It is the only filter offered, so
// training and inference cannot disagree about it.
const ResizeCatmullRom = "catmull-rom"

// MaxSide bounds Height, Width and ResizeShorter (and package data's load
// side) so a corrupt manifest cannot ask for a gigantic buffer per image.
const MaxSide = 8192

// ErrPreprocess marks an invalid Preprocess (see Preprocess.Validate).
var ErrPreprocess = errors.New("invalid preprocessing")

// Preprocess converts a decoded image into the network's input. It is the
// single definition of test-time preprocessing: training evaluation and the
// ONNX inference side both call Image, and the export step writes this struct
// into the model manifest (hence the JSON names). The steps, in order:
//
// Step 1, alpha: composite onto Background in 16-bit premultiplied colour,
// with c a colour channel of image.Image's RGBA(), a its alpha and bg the
// Background channel times 0x101 (integer division):
//
//	out = c + bg*(65535 - a)/65535
//
// Opaque pixels pass unchanged. The zero Background is black, which is what
// Go's own colour models do with premultiplied alpha and matches the black
// backgrounds of MNIST and Fashion-MNIST; set {255, 255, 255} for datasets
// photographed on white.
//
// Step 2, size, by ResizeMode, always with Catmull-Rom (ResizeCatmullRom),
// whose support widens when shrinking, so downscaling is antialiased.
// Squash (arch.Squash, or empty) resizes to Height x Width only when the
// image size differs; an image of the right size is not resampled. The
// aspect ratio is not preserved. Center-crop (arch.CenterCrop) resizes a
// w x h image so that its shorter side is s = ResizeShorter, the longer one
// truncated as torchvision's Resize(s) does (no resampling when the size
// is already that):
//
//	w <= h:  w' = s,             h' = floor(s*h/w)
//	w >  h:  w' = floor(s*w/h),  h' = s
//
// and takes the centre Height x Width window at the offsets of
// torchvision's CenterCrop (Python's round, halves to even):
//
//	top = round((h' - Height)/2),   left = round((w' - Width)/2)
//
// Only the window is computed; its pixels equal those of the whole resized
// image. ShorterSideSize and CenterCropWindow give this geometry. An image
// longer than MaxResizeAspect:1 (a 4:1 strip) is first cropped around its
// centre to that ratio, which bounds the resampler's memory.
//
// Where this differs from torchvision on PIL images: torchvision's default
// filter is bilinear (with antialiasing when shrinking), Preprocess always
// uses Catmull-Rom bicubic, also antialiased, computed in 16-bit rather than
// PIL's 8-bit fixed point; pixels differ by a few levels, the geometry
// (sizes, offsets) is identical.
//
// Step 3, channels: 3 keeps R, G, B (the high byte of each 16-bit value); 1
// takes the ITU-R BT.601 luma exactly as image/color.GrayModel does, from
// 16-bit r, g, b to 8-bit y, so a gray image comes back with its own values:
//
//	y = (19595*r + 38470*g + 7471*b + 1<<15) >> 24
//
// Step 4, normalisation (Normalize), per channel c:
//
//	x = (pix/255 - Mean[c]) / Std[c]
//
// Steps 1-3 are Pixels and give uint8 CHW; datasets store that form. A
// Preprocess is a value; its methods do not modify it and are safe for
// concurrent use.
type Preprocess struct {
	Channels int       `json:"channels"`
	Height   int       `json:"height"`
	Width    int       `json:"width"`
	Mean     []float32 `json:"mean"`
	Std      []float32 `json:"std"`
	Resize   string    `json:"resize"`
	// ResizeMode is arch.Squash or arch.CenterCrop (step 2). The trainer
	// always states it; empty, as in manifests written before it existed,
	// means squash.
	ResizeMode arch.ResizeMode `json:"resize_mode,omitempty"`
	// ResizeShorter is, for center-crop, the length the shorter side is
	// resized to before the crop, at least max(Height, Width) (ImageNet
	// evaluation: 256 for a 224 crop, see CenterCropResize); 0 for squash.
	ResizeShorter int      `json:"resize_shorter,omitempty"`
	Background    [3]uint8 `json:"background"`
}

// Validate reports every problem of p joined into one error wrapping
// ErrPreprocess: Channels not 1 or 3, Height or Width outside [1, 8192],
// Mean or Std without one finite value per channel, a Std value <= 0, a
// Resize other than "catmull-rom" (the empty string means catmull-rom), a
// ResizeMode other than squash, center-crop or empty, or a ResizeShorter
// that is not 0 for squash or not in [max(Height, Width), 8192] for
// center-crop.
// Call it on any Preprocess read from outside (a manifest) before use.
func (p Preprocess) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrPreprocess}, args...)...))
	}
	if err := p.CheckGeometry(); err != nil {
		errs = append(errs, err)
	}
	if len(p.Mean) != p.Channels {
		bad("%d mean values for %d channels", len(p.Mean), p.Channels)
	}
	if len(p.Std) != p.Channels {
		bad("%d std values for %d channels", len(p.Std), p.Channels)
	}
	for c, m := range p.Mean {
		if math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
			bad("mean[%d] = %v is not finite", c, m)
		}
	}
	for c, s := range p.Std {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			bad("std[%d] = %v, want a finite value > 0", c, s)
		}
	}
	if p.Resize != "" && p.Resize != ResizeCatmullRom {
		bad("resize %q, want %q", p.Resize, ResizeCatmullRom)
	}
	return errors.Join(errs...)
}

// CheckGeometry validates the fields Pixels needs (Channels, the size and
// the resize mode), not the normalisation: enough to load images whose
// normalisation is applied later (package data's image folders).
func (p Preprocess) CheckGeometry() error {
	var errs []error
	if p.Channels != 1 && p.Channels != 3 {
		errs = append(errs, fmt.Errorf("%w: channels %d, want 1 or 3", ErrPreprocess, p.Channels))
	}
	if p.Height < 1 || p.Height > MaxSide || p.Width < 1 || p.Width > MaxSide {
		errs = append(errs, fmt.Errorf("%w: size %dx%d, want each side in [1, %d]", ErrPreprocess, p.Height, p.Width, MaxSide))
	}
	switch p.ResizeMode {
	case "", arch.Squash:
		if p.ResizeShorter != 0 {
			errs = append(errs, fmt.Errorf("%w: resize_shorter %d with resize mode squash, want 0", ErrPreprocess, p.ResizeShorter))
		}
	case arch.CenterCrop:
		if p.ResizeShorter < max(p.Height, p.Width) || p.ResizeShorter > MaxSide {
			errs = append(errs, fmt.Errorf("%w: resize_shorter %d for a %dx%d center crop, want [%d, %d]",
				ErrPreprocess, p.ResizeShorter, p.Height, p.Width, max(p.Height, p.Width), MaxSide))
		}
	default:
		errs = append(errs, fmt.Errorf("%w: resize mode %w", ErrPreprocess, p.ResizeMode.Check()))
	}
	return errors.Join(errs...)
}

// ShorterSideSize returns the size (w2, h2) of a w x h image resized so that
// its shorter side is s, as torchvision's Resize(s) computes it: the longer
// side is s*long/short truncated. Sides must be >= 1.
func ShorterSideSize(w, h, s int) (w2, h2 int) {
	if w <= h {
		return s, s * h / w
	}
	return s * w / h, s
}

// CenterCropWindow returns the window of size cw x ch at the centre of a
// w x h image, at the offsets of torchvision's CenterCrop:
// round((w-cw)/2) and round((h-ch)/2) with halves rounded to even, as
// Python's round does. It requires cw <= w and ch <= h.
func CenterCropWindow(w, h, cw, ch int) image.Rectangle {
	left := int(math.RoundToEven(float64(w-cw) / 2))
	top := int(math.RoundToEven(float64(h-ch) / 2))
	return image.Rect(left, top, left+cw, top+ch)
}

// CenterCropResize returns the ResizeShorter for a center crop of side
// (the larger of Height and Width) that keeps the fraction ratio of the
// resized shorter side, floor(side/ratio) as timm computes it from its
// crop_pct: ratio 0.875 gives 256 for 224, torchvision's and the
// authors' ImageNet evaluation (Resize(256), CenterCrop(224)); ratio 1
// crops the whole shorter side. ratio must lie in (0, 1].
func CenterCropResize(side int, ratio float64) int {
	// The epsilon keeps 224/0.875 at 256 despite rounding in the division.
	return int(math.Floor(float64(side)/ratio + 1e-9))
}

// ImageSize returns Channels*Height*Width, the length of Pixels' result.
func (p Preprocess) ImageSize() int { return p.Channels * p.Height * p.Width }

// Pixels runs steps 1-3 (alpha, resize, channels) and returns a new uint8
// CHW slice of length Channels*Height*Width. An image with empty bounds
// gives an all-zero result. It panics if Channels, Height, Width or the
// resize mode are invalid (see Validate).
func (p Preprocess) Pixels(img image.Image) []uint8 {
	if err := p.CheckGeometry(); err != nil {
		panic("imaging: Preprocess.Pixels: " + err.Error())
	}
	out := make([]uint8, p.ImageSize())
	b := img.Bounds()
	if b.Empty() {
		return out
	}
	p.PixelsOf(Composite(img, p.Background), out)
	return out
}

// PixelsOf runs steps 2-3 (resize, channels) on rgba, an image composited
// by Composite (non-empty, bounds at (0, 0)), writing
// Channels*Height*Width values to out: Pixels after its first step, for a
// caller that resizes one composited image twice (package data's photos).
func (p Preprocess) PixelsOf(rgba *image.RGBA64, out []uint8) {
	nw, nh, window := p.Width, p.Height, image.Rect(0, 0, p.Width, p.Height)
	if p.ResizeMode == arch.CenterCrop {
		rgba = limitAspect(rgba)
		nw, nh = ShorterSideSize(rgba.Rect.Dx(), rgba.Rect.Dy(), p.ResizeShorter)
		window = CenterCropWindow(nw, nh, p.Width, p.Height)
	}
	toCHW(resizeWindow(rgba, nw, nh, window), p.Channels, out)
}

// MaxResizeAspect bounds the aspect ratio an image is resized at by its
// shorter side (center-crop preprocessing, package data's Photos): a longer image is first
// cropped around its centre to MaxResizeAspect:1. The resampler allocates
// the whole resized width (or height) times the source's other side, which
// for a 100000x10 strip would be gigabytes; the crop keeps it to a few
// times the image. The centre window is the same region of the image; its
// pixels can differ from an uncropped resize by the sub-pixel shift of a
// truncated size.
const MaxResizeAspect = 4

// limitAspect returns img cropped around its centre to at most
// MaxResizeAspect:1 (a sub-image, not a copy).
func limitAspect(img *image.RGBA64) *image.RGBA64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	win := img.Rect
	switch {
	case w > MaxResizeAspect*h:
		win = CenterCropWindow(w, h, MaxResizeAspect*h, h).Add(img.Rect.Min)
	case h > MaxResizeAspect*w:
		win = CenterCropWindow(w, h, w, MaxResizeAspect*w).Add(img.Rect.Min)
	}
	return img.SubImage(win).(*image.RGBA64)
}

// resizeWindow returns the pixels inside window of src resized to nw x nh
// with Catmull-Rom, window being in the coordinates of the resized image
// (origin at its top-left corner) and inside it. When src already is
// nw x nh it is not resampled. Only the window's pixels are computed.
func resizeWindow(src *image.RGBA64, nw, nh int, window image.Rectangle) *image.RGBA64 {
	if src.Rect.Dx() == nw && src.Rect.Dy() == nh {
		return src.SubImage(window.Add(src.Rect.Min)).(*image.RGBA64)
	}
	dst := image.NewRGBA64(window)
	draw.CatmullRom.Scale(dst, image.Rect(0, 0, nw, nh), src, src.Bounds(), draw.Src, nil)
	return dst
}

// ResizeShorter converts rgba, an image composited by Composite
// (non-empty, bounds at (0, 0)), as center-crop preprocessing does but at
// another size: cut to MaxResizeAspect:1, resized so its shorter side is
// side, and the centre window of at most maxSide x maxSide kept. It
// returns the window's CHW pixels (channels 1 or 3 as in Preprocess), the
// window in the coordinates of the whole resized image, and that image's
// size. It is how package data stores photos at load resolution.
func ResizeShorter(rgba *image.RGBA64, channels, side, maxSide int) (pix []uint8, win image.Rectangle, size image.Point) {
	rgba = limitAspect(rgba)
	nw, nh := ShorterSideSize(rgba.Rect.Dx(), rgba.Rect.Dy(), side)
	win = CenterCropWindow(nw, nh, min(nw, maxSide), min(nh, maxSide))
	pix = make([]uint8, channels*win.Dx()*win.Dy())
	toCHW(resizeWindow(rgba, nw, nh, win), channels, pix)
	return pix, win, image.Pt(nw, nh)
}

// toCHW writes step 3 (channels) of img into out, which holds
// channels*Dy*Dx values: 3 keeps the high bytes of R, G, B; 1 takes the
// BT.601 luma of Preprocess's doc comment.
func toCHW(img *image.RGBA64, channels int, out []uint8) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	plane := w * h
	for y := range h {
		row := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):]
		for x := range w {
			px := row[8*x : 8*x+6 : 8*x+6]
			r := uint32(px[0])<<8 | uint32(px[1])
			g := uint32(px[2])<<8 | uint32(px[3])
			bl := uint32(px[4])<<8 | uint32(px[5])
			i := y*w + x
			if channels == 1 {
				out[i] = uint8((19595*r + 38470*g + 7471*bl + 1<<15) >> 24)
			} else {
				out[i] = uint8(r >> 8)
				out[plane+i] = uint8(g >> 8)
				out[2*plane+i] = uint8(bl >> 8)
			}
		}
	}
}

// Composite returns img composited onto the opaque colour bg, as an opaque
// RGBA64 image whose bounds start at (0, 0): step 1 (alpha) of Pixels.
func Composite(img image.Image, bg [3]uint8) *image.RGBA64 {
	b := img.Bounds()
	out := image.NewRGBA64(image.Rect(0, 0, b.Dx(), b.Dy()))
	bg16 := [3]uint32{uint32(bg[0]) * 0x101, uint32(bg[1]) * 0x101, uint32(bg[2]) * 0x101}
	fast, _ := img.(image.RGBA64Image)
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var c [3]uint32
			var a uint32
			if fast != nil {
				v := fast.RGBA64At(x, y)
				c, a = [3]uint32{uint32(v.R), uint32(v.G), uint32(v.B)}, uint32(v.A)
			} else {
				c[0], c[1], c[2], a = img.At(x, y).RGBA()
			}
			for k := range c {
				if a != 0xffff {
					c[k] += bg16[k] * (0xffff - a) / 0xffff
				}
				// A well-formed premultiplied colour never exceeds its
				// alpha; clamp so a malformed custom image cannot wrap.
				c[k] = min(c[k], 0xffff)
				out.Pix[i+2*k] = uint8(c[k] >> 8)
				out.Pix[i+2*k+1] = uint8(c[k])
			}
			out.Pix[i+6], out.Pix[i+7] = 0xff, 0xff
			i += 8
		}
	}
	return out
}

// Normalize writes step 4 for one or more CHW images:
//
//	dst[i] = (float32(pix[i])/255 - Mean[c]) / Std[c],   c = (i / (Height*Width)) mod Channels
//
// computed in float32. pix and dst must have the same length, a multiple of
// Channels*Height*Width; it panics otherwise or if Mean or Std have fewer
// than Channels values.
func (p Preprocess) Normalize(pix []uint8, dst []float32) {
	n := p.Normalizer()
	if len(pix) != len(dst) || len(pix)%p.ImageSize() != 0 {
		panic(fmt.Sprintf("imaging: Preprocess.Normalize: %d pixels into %d floats, want equal lengths that are a multiple of %d", len(pix), len(dst), p.ImageSize()))
	}
	n.Apply(pix, dst)
}

// Image is the test-time preprocessing function: Pixels then Normalize, as
// a new float32 CHW slice (a batch of one in NCHW). It panics on an invalid
// Preprocess: call Validate on one read from outside.
func (p Preprocess) Image(img image.Image) []float32 {
	if err := p.Validate(); err != nil {
		panic("imaging: Preprocess.Image: " + err.Error())
	}
	pix := p.Pixels(img)
	dst := make([]float32, len(pix))
	p.Normalize(pix, dst)
	return dst
}

// Normalizer holds, per channel, the normalised value of each of the 256
// pixel values, so normalising a batch is a table look-up per pixel and
// every caller gets bit-identical results. Make one with
// Preprocess.Normalizer; it is read-only, safe for concurrent use.
type Normalizer struct {
	plane int
	table [][256]float32
}

// Normalizer returns the look-up tables of step 4 (Normalize) for p, for
// a caller that normalises many batches (package data's Batcher). It
// panics if Channels, Height, Width, Mean or Std are invalid.
func (p Preprocess) Normalizer() Normalizer {
	if p.Channels < 1 || len(p.Mean) < p.Channels || len(p.Std) < p.Channels || p.Height < 1 || p.Width < 1 {
		panic(fmt.Sprintf("imaging: Preprocess: %d channels of %dx%d with %d mean and %d std values", p.Channels, p.Height, p.Width, len(p.Mean), len(p.Std)))
	}
	n := Normalizer{plane: p.Height * p.Width, table: make([][256]float32, p.Channels)}
	for c := range n.table {
		for v := range 256 {
			n.table[c][v] = (float32(v)/255 - p.Mean[c]) / p.Std[c]
		}
	}
	return n
}

// Apply normalises whole CHW images as Normalize does; len(pix) must be a
// multiple of Channels*Height*Width and len(dst) at least len(pix).
func (n Normalizer) Apply(pix []uint8, dst []float32) {
	dst = dst[:len(pix)]
	for off := 0; off < len(pix); off += n.plane * len(n.table) {
		for c := range n.table {
			t := &n.table[c]
			s := off + c*n.plane
			d := dst[s : s+n.plane]
			for i, v := range pix[s : s+n.plane] {
				d[i] = t[v]
			}
		}
	}
}
