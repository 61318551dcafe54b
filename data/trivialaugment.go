package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// AugmentOp is one operation of TrivialAugmentWide's augmentation space,
// numbered in torchvision's order (torchvision.transforms.TrivialAugmentWide,
// _augmentation_space), so that a uniform draw of the index is torchvision's
// uniform draw of the operation.
type AugmentOp uint8

// The operations of TrivialAugmentWide, with the meaning of the magnitude m
// that AugmentOp.Apply takes (torchvision.transforms.autoaugment._apply_op).
const (
	OpIdentity     AugmentOp = iota // copy; m unused
	OpShearX                        // dst(x, y) = src(x + m*y, y), x, y from the top-left corner
	OpShearY                        // dst(x, y) = src(x, y + m*x), x, y from the top-left corner
	OpTranslateX                    // dst(x, y) = src(x - int(m), y): right by int(m) pixels
	OpTranslateY                    // dst(x, y) = src(x, y - int(m)): down by int(m) pixels
	OpRotate                        // rotate m degrees counter-clockwise about the centre
	OpBrightness                    // blend with black, factor 1+m
	OpColor                         // blend with the grayscale image, factor 1+m
	OpContrast                      // blend with the mean gray level, factor 1+m
	OpSharpness                     // blend with the 3x3 smoothed image, factor 1+m
	OpPosterize                     // keep the int(m) highest bits
	OpSolarize                      // invert pixels >= m
	OpAutoContrast                  // stretch each channel to [0, 255]; m unused
	OpEqualize                      // equalise each channel's histogram; m unused

	numAugmentOps = iota
)

// TrivialAugmentBins is the number of magnitude bins of TrivialAugmentWide
// (torchvision's default num_magnitude_bins).
const TrivialAugmentBins = 31

var augmentOpNames = [numAugmentOps]string{
	"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
	"Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize",
	"AutoContrast", "Equalize",
}

// String returns torchvision's name of the operation, e.g. "ShearX".
func (op AugmentOp) String() string {
	if op >= numAugmentOps {
		return fmt.Sprintf("AugmentOp(%d)", uint8(op))
	}
	return augmentOpNames[op]
}

// hasBins reports whether TrivialAugmentWide draws a magnitude bin for op;
// Identity, AutoContrast and Equalize have none (magnitude 0, no draw).
func (op AugmentOp) hasBins() bool {
	return op != OpIdentity && op != OpAutoContrast && op != OpEqualize && op < numAugmentOps
}

// signed reports whether TrivialAugmentWide negates op's magnitude with
// probability 1/2: all operations with bins except Posterize and Solarize.
func (op AugmentOp) signed() bool {
	return op.hasBins() && op != OpPosterize && op != OpSolarize
}

// factorDeltas is torch.linspace(0.0, 0.99, 31), the float32 values that
// torch 1.13's vectorised CPU kernel computes (chunks of 8 as base + k*step,
// so bins 5, 10, 19 and 25 to 27 differ by one ulp from i*0.99/30). They are
// the ShearX/ShearY and enhancement magnitudes of TrivialAugmentWide.
var factorDeltas = [TrivialAugmentBins]float32{
	0, 0.033, 0.066, 0.099, 0.132, 0.16499999, 0.198, 0.231,
	0.264, 0.297, 0.32999998, 0.363, 0.396, 0.429, 0.462, 0.495,
	0.528, 0.561, 0.594, 0.62700003, 0.66, 0.693, 0.726, 0.759,
	0.792, 0.82499999, 0.85800004, 0.89100003, 0.924, 0.957, 0.99,
}

// WideMagnitude returns the unsigned magnitude of op in magnitude bin bin
// (0 <= bin < TrivialAugmentBins) of TrivialAugmentWide's "wide" table:
//
//	ShearX, ShearY                            linspace(0, 0.99, 31)
//	TranslateX, TranslateY                    linspace(0, 32, 31) pixels
//	Rotate                                    linspace(0, 135, 31) degrees
//	Brightness, Color, Contrast, Sharpness    linspace(0, 0.99, 31)
//	Posterize                                 8 - round(bin/5) bits (8 ... 2)
//	Solarize                                  linspace(255, 0, 31)
//	Identity, AutoContrast, Equalize          0
//
// Values are torch's float32 ones, widened (linspace(0, 32, 31) differs from
// torch's by at most an ulp, which int() truncation never sees). It panics
// if bin is out of range.
func (op AugmentOp) WideMagnitude(bin int) float64 {
	if bin < 0 || bin >= TrivialAugmentBins {
		panic(fmt.Sprintf("data: AugmentOp.WideMagnitude: bin %d outside [0, %d)", bin, TrivialAugmentBins))
	}
	last := float32(TrivialAugmentBins - 1)
	switch op {
	case OpShearX, OpShearY, OpBrightness, OpColor, OpContrast, OpSharpness:
		return float64(factorDeltas[bin])
	case OpTranslateX, OpTranslateY:
		return float64(float32(bin) * (32 / last))
	case OpRotate:
		return float64(float32(bin) * (135 / last)) // 4.5 degree steps, exact
	case OpPosterize:
		// round(bin / 5) with no ties: bin/5 is never k + 1/2.
		return float64(8 - (bin+2)/5)
	case OpSolarize:
		return float64(255 - float32(bin)*(255/last)) // 8.5 steps, exact
	}
	return 0
}

// TrivialAugmentWide applies one random operation of TrivialAugmentWide
// (Müller & Hutter, 2021, as torchvision.transforms.TrivialAugmentWide with
// its defaults: 31 magnitude bins, nearest interpolation, fill 0) to the CHW
// image src (c x h x w uint8, c = 1 or 3) and writes the result to dst. Like
// torchvision it draws, from rng only, the operation uniformly from the 14
// of AugmentOp; then, for operations with magnitudes, the bin uniformly from
// TrivialAugmentBins; then, for signed operations, the sign (negative with
// probability 1/2). It returns the operation and the signed magnitude it
// applied. dst may be src; otherwise they must not overlap. It panics on a
// bad shape as AugmentOp.Apply does.
func TrivialAugmentWide(rng *rand.Rand, src, dst []uint8, c, h, w int) (AugmentOp, float64) {
	op := AugmentOp(rng.IntN(numAugmentOps))
	m := 0.0
	if op.hasBins() {
		m = op.WideMagnitude(rng.IntN(TrivialAugmentBins))
	}
	if op.signed() && rng.IntN(2) == 1 {
		m = -m
	}
	op.Apply(m, src, dst, c, h, w)
	return op, m
}

// Apply writes op at magnitude m (see the AugmentOp constants) applied to
// the CHW image src (c x h x w uint8, c = 1 or 3) to dst, exactly as
// torchvision 0.14's _apply_op on a uint8 tensor does it
// (torchvision/transforms/functional_tensor.py; the tests compare every
// operation, bin and sign bit for bit on four images):
//
//   - Geometric operations sample the nearest source pixel of each output
//     pixel centre through the inverse affine map (grid_sample, nearest,
//     align_corners=False) in torch's float32 arithmetic; pixels that fall
//     outside the image are 0. Shears act about the top-left corner of the
//     image (torchvision passes center=[0, 0] so that they match the
//     original AutoAugment); translation and rotation about the centre.
//
//   - Blends (_blend) compute, per pixel p and degenerate value q,
//
//     out = trunc(clamp(f*p + (1-f)*q, 0, 255)),  f = 1+m, in float32
//
//     with q = 0 (Brightness); q = trunc(0.2989 R + 0.587 G + 0.114 B)
//     (Color; a 1-channel image is returned unchanged, as in PIL); q = the
//     mean of that grayscale image, or of the image when c = 1 (Contrast);
//     q = round of the 3x3 smooth kernel [1 1 1; 1 5 1; 1 1 1]/13 inside,
//     the pixel itself on the one-pixel border (Sharpness; images under 3
//     pixels in a dimension are returned unchanged).
//
//   - Posterize keeps the int(m) highest bits; Solarize replaces p >= m by
//     255-p; AutoContrast maps each channel's [min, max] linearly onto
//     [0, 255] (truncating; a constant channel is kept); Equalize maps each
//     channel through torchvision's histogram-equalisation table (a channel
//     with fewer than 255 pixels below its brightest value is kept).
//
// On PIL images, as torchvision's CIFAR recipe applies it before ToTensor,
// torchvision's results differ slightly: by one gray level for Color and
// Contrast in about 15% of pixels and for Sharpness in 0.5%, and by the
// sampled pixel for 0.04% of Rotate's (measured over all bins on twenty
// 32x32 RGB images made of Fashion-MNIST). dst may be src (a
// geometric operation or Sharpness then copies the image first); otherwise
// they must not overlap. It panics if c is not 1 or 3, a slice is shorter
// than c*h*w, a factor 1+m is negative, Posterize's int(m) is outside
// [0, 8], Solarize's m is above 255, or op is not an AugmentOp constant.
func (op AugmentOp) Apply(m float64, src, dst []uint8, c, h, w int) {
	checkImage("AugmentOp.Apply", src, dst, c, h, w)
	if c != 1 && c != 3 {
		panic(fmt.Sprintf("data: AugmentOp.Apply: image has %d channels, want 1 or 3", c))
	}
	n := c * h * w
	src, dst = src[:n], dst[:n]
	if n > 0 && &src[0] == &dst[0] && (op.geometric() || op == OpSharpness) {
		src = append([]uint8(nil), src...)
	}
	switch {
	case op == OpIdentity:
		copy(dst, src)
	case op.geometric():
		op.warp(m, src, dst, c, h, w)
	case op >= OpBrightness && op <= OpSharpness:
		op.enhance(m, src, dst, c, h, w)
	default:
		op.pointwise(m, src, dst, c, h, w)
	}
}

// warp applies a geometric operation (shear, translation, rotation) with
// nearest-neighbour sampling; src and dst do not overlap.
func (op AugmentOp) warp(m float64, src, dst []uint8, c, h, w int) {
	switch op {
	case OpShearX, OpShearY:
		shear := [2]float64{}
		shear[op-OpShearX] = math.Atan(m) * radToDeg
		corner := [2]float64{-0.5 * float64(w), -0.5 * float64(h)}
		warpNearest(inverseAffine(corner, 0, [2]float64{}, shear), src, dst, c, h, w)
	case OpTranslateX, OpTranslateY:
		shift := [2]float64{}
		shift[op-OpTranslateX] = float64(int(m))
		warpNearest(inverseAffine([2]float64{}, 0, shift, [2]float64{}), src, dst, c, h, w)
	case OpRotate:
		warpNearest(inverseAffine([2]float64{}, -m, [2]float64{}, [2]float64{}), src, dst, c, h, w)
	}
}

// enhance applies a blend operation (brightness, colour, contrast,
// sharpness) at factor 1+m, as PIL's ImageEnhance does.
func (op AugmentOp) enhance(m float64, src, dst []uint8, c, h, w int) {
	switch op {
	case OpBrightness:
		f := enhanceFactor(op, m)
		for i, p := range src {
			dst[i] = blend(f, p, 0)
		}
	case OpColor:
		f := enhanceFactor(op, m)
		if c == 1 {
			copy(dst, src)
			return
		}
		hw := h * w
		for i := range hw {
			q := float32(grayLevel(src[i], src[hw+i], src[2*hw+i]))
			for ch := range 3 {
				dst[ch*hw+i] = blend(f, src[ch*hw+i], q)
			}
		}
	case OpContrast:
		f := enhanceFactor(op, m)
		q := meanGray(src, c, h*w)
		for i, p := range src {
			dst[i] = blend(f, p, q)
		}
	case OpSharpness:
		f := enhanceFactor(op, m)
		if h <= 2 || w <= 2 {
			copy(dst, src)
			return
		}
		sharpen(f, src, dst, c, h, w)
	}
}

// pointwise applies an operation on pixel values (posterize, solarize,
// autocontrast, equalize); it panics on an unknown operation.
func (op AugmentOp) pointwise(m float64, src, dst []uint8, c, h, w int) {
	switch op {
	case OpPosterize:
		bits := int(m)
		if bits < 0 || bits > 8 {
			panic(fmt.Sprintf("data: AugmentOp.Apply: Posterize to %d bits, want 0 to 8", bits))
		}
		mask := ^uint8(1<<(8-bits) - 1)
		for i, p := range src {
			dst[i] = p & mask
		}
	case OpSolarize:
		if m > 255 {
			panic(fmt.Sprintf("data: AugmentOp.Apply: Solarize threshold %g above 255", m))
		}
		// torch compares the uint8 pixel with the threshold in float32.
		t := float32(m)
		for i, p := range src {
			if float32(p) >= t {
				p = 255 - p
			}
			dst[i] = p
		}
	case OpAutoContrast:
		for ch := range c {
			autoContrast(src[ch*h*w:(ch+1)*h*w], dst[ch*h*w:(ch+1)*h*w])
		}
	case OpEqualize:
		for ch := range c {
			equalize(src[ch*h*w:(ch+1)*h*w], dst[ch*h*w:(ch+1)*h*w])
		}
	default:
		panic(fmt.Sprintf("data: AugmentOp.Apply: unknown operation %d", uint8(op)))
	}
}

// geometric reports whether op moves pixels (and so cannot run in place).
func (op AugmentOp) geometric() bool {
	return op >= OpShearX && op <= OpRotate
}

// Python's math.radians and math.degrees multiply by these (CPython
// mathmodule.c: degToRad = Py_MATH_PI / 180.0, radToDeg = 180.0 / Py_MATH_PI).
// The float64 conversion makes Go divide the rounded π, as C does, instead
// of the exact constant.
var (
	degToRad = float64(math.Pi) / 180
	radToDeg = 180 / float64(math.Pi)
)

// inverseAffine is torchvision's _get_inverse_affine_matrix with scale 1:
// the 2x3 matrix that maps output pixel coordinates, relative to the image
// centre, to input coordinates, for the forward map that rotates by angle
// degrees and shears by shear degrees about center (relative to the image
// centre as well), then translates. The float64 operations follow
// torchvision's order; explicit conversions keep Go from fusing them.
func inverseAffine(center [2]float64, angle float64, translate, shear [2]float64) [6]float64 {
	rot := angle * degToRad
	sx, sy := shear[0]*degToRad, shear[1]*degToRad
	cx, cy := center[0], center[1]
	tx, ty := translate[0], translate[1]
	a := math.Cos(rot-sy) / math.Cos(sy)
	b := float64(-math.Cos(rot-sy)*math.Tan(sx))/math.Cos(sy) - math.Sin(rot)
	c := math.Sin(rot-sy) / math.Cos(sy)
	d := float64(-math.Sin(rot-sy)*math.Tan(sx))/math.Cos(sy) + math.Cos(rot)
	m := [6]float64{d, -b, 0, -c, a, 0}
	m[2] += float64(m[0]*(-cx-tx)) + float64(m[1]*(-cy-ty))
	m[5] += float64(m[3]*(-cx-tx)) + float64(m[4]*(-cy-ty))
	m[2] += cx
	m[5] += cy
	return m
}

// warpNearest writes dst[ch][y][x] = src[ch][round(iy)][round(ix)], or 0
// outside the image, where (ix, iy) is the source position of output pixel
// (x, y) under the inverse affine matrix m, computed as torchvision's
// _gen_affine_grid and grid_sample (nearest, align_corners=False) do in
// float32, rounding half to even:
//
//	(bx, by) = (x - w/2 + 0.5, y - h/2 + 0.5)          pixel centre
//	gx = bx*(m0/(w/2)) + by*(m1/(w/2)) + m2/(w/2)     normalised grid
//	gy = bx*(m3/(h/2)) + by*(m4/(h/2)) + m5/(h/2)
//	ix = (gx+1)*(w/2) - 0.5,  iy = (gy+1)*(h/2) - 0.5
//
// The grid is a [h*w, 3] x [3, 2] matrix product, whose rounding decides
// exact ties (a 90-degree turn of an image with one odd side puts sample
// points exactly between two pixels). warpNearest accumulates the terms in
// order with fused multiply-adds, as torch's BLAS product does. (For images
// under 67 pixels torch uses its own loop, which rounds each product; for
// the magnitudes of TrivialAugmentWide that changes no sample on any image
// size up to 11x11.)
func warpNearest(m [6]float64, src, dst []uint8, c, h, w int) {
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	r00, r10, r20 := float32(m[0])/hw, float32(m[1])/hw, float32(m[2])/hw
	r01, r11, r21 := float32(m[3])/hh, float32(m[4])/hh, float32(m[5])/hh
	for y := range h {
		by := float32(y) + float32(0.5-0.5*float64(h))
		for x := range w {
			bx := float32(x) + float32(0.5-0.5*float64(w))
			gx := fma32(by, r10, float32(bx*r00)) + r20
			gy := fma32(by, r11, float32(bx*r01)) + r21
			ix := float32(float32(gx+1)*hw) - 0.5
			iy := float32(float32(gy+1)*hh) - 0.5
			sx, sy := math.RoundToEven(float64(ix)), math.RoundToEven(float64(iy))
			inside := sx >= 0 && sx < float64(w) && sy >= 0 && sy < float64(h)
			for ch := range c {
				var v uint8
				if inside {
					v = src[(ch*h+int(sy))*w+int(sx)]
				}
				dst[(ch*h+y)*w+x] = v
			}
		}
	}
}

// fma32 returns a*b + c rounded once to float32, as a float32 fused
// multiply-add does. The float64 product is exact; the float64 sum s is
// rounded, which changes the float32 result only when s lies exactly
// halfway between two float32 values, and then the sum's rounding error e
// (TwoSum) tells which side the exact value is on.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	t := s - p
	e := (p - (s - t)) + (float64(c) - t)
	r := float32(s)
	if e == 0 || float64(r) == s {
		return r
	}
	other := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if s == (float64(r)+float64(other))/2 && (e > 0) == (other > r) {
		return other
	}
	return r
}

// enhanceFactor returns the blend factor 1+m of the enhancement op, which
// torchvision requires to be non-negative.
func enhanceFactor(op AugmentOp, m float64) float64 {
	f := 1 + m
	if !(f >= 0) {
		panic(fmt.Sprintf("data: AugmentOp.Apply: %s factor 1%+g is negative", op, m))
	}
	return f
}

// blend is torchvision's _blend of uint8 images: f*p + (1-f)*q rounded to
// float32 step by step, clamped to [0, 255] and truncated to uint8.
func blend(f float64, p uint8, q float32) uint8 {
	v := float32(float32(f)*float32(p)) + float32(float32(1-f)*q)
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v)
}

// grayLevel is torchvision's rgb_to_grayscale of a uint8 pixel: the float32
// sum 0.2989 R + 0.587 G + 0.114 B (ITU-R BT.601, as in TensorFlow),
// truncated.
func grayLevel(r, g, b uint8) uint8 {
	v := float32(float32(0.2989)*float32(r)) + float32(float32(0.587)*float32(g))
	return uint8(float32(v + float32(float32(0.114)*float32(b))))
}

// meanGray is the float32 mean of the image's grayscale version (the image
// itself when c = 1), the degenerate value of Contrast: torch's float32 sum
// divided by the pixel count. Below 2^24/255 pixels that sum is exact
// whatever its order, so the mean is the correctly rounded sum/n.
func meanGray(src []uint8, c, hw int) float32 {
	var sum int64
	if c == 1 {
		for _, p := range src {
			sum += int64(p)
		}
	} else {
		for i := range hw {
			sum += int64(grayLevel(src[i], src[hw+i], src[2*hw+i]))
		}
	}
	return float32(sum) / float32(hw)
}

// sharpen blends each channel with its smoothed version: inside, the 3x3
// kernel [1 1 1; 1 5 1; 1 1 1]/13 rounded to the nearest integer (never a
// tie: the weighted sum s over 13 is never k + 1/2), on the border the pixel
// itself (torchvision's _blurred_degenerate_image, PIL's SMOOTH filter).
func sharpen(f float64, src, dst []uint8, c, h, w int) {
	for ch := range c {
		s, d := src[ch*h*w:(ch+1)*h*w], dst[ch*h*w:(ch+1)*h*w]
		for y := range h {
			for x := range w {
				p := s[y*w+x]
				q := p
				if y > 0 && y < h-1 && x > 0 && x < w-1 {
					sum := 4 * int(p)
					for _, row := range [3]int{y - 1, y, y + 1} {
						for _, col := range [3]int{x - 1, x, x + 1} {
							sum += int(s[row*w+col])
						}
					}
					q = uint8((2*sum + 13) / 26)
				}
				d[y*w+x] = blend(f, p, float32(q))
			}
		}
	}
}

// autoContrast is torchvision's autocontrast of one channel:
//
//	out = trunc(min((p - lo) * ((1 / (hi - lo)) * 255), 255))   in float32
//
// with lo and hi the channel's minimum and maximum; a constant channel is
// copied.
func autoContrast(src, dst []uint8) {
	lo, hi := uint8(255), uint8(0)
	for _, p := range src {
		lo, hi = min(lo, p), max(hi, p)
	}
	if lo >= hi {
		copy(dst, src)
		return
	}
	// Python's 255 / tensor is tensor.reciprocal() * 255: two roundings.
	scale := float32(float32(1)/float32(hi-lo)) * 255
	for i, p := range src {
		v := float32(float32(p)-float32(lo)) * scale
		dst[i] = uint8(min(v, 255))
	}
}

// equalize is torchvision's _scale_channel: with hist the channel's
// 256-bin histogram and cum its running sum,
//
//	step   = (pixels - count of the brightest value present) / 255   (floor)
//	lut[0] = 0,  lut[v] = min(255, (cum[v-1] + step/2) / step)       (floor)
//
// and out = lut[p]; a channel with step 0 is copied.
func equalize(src, dst []uint8) {
	var hist [256]int
	for _, p := range src {
		hist[p]++
	}
	brightestCount := 0
	for _, n := range hist {
		if n > 0 {
			brightestCount = n
		}
	}
	step := (len(src) - brightestCount) / 255
	if step == 0 {
		copy(dst, src)
		return
	}
	var lut [256]uint8
	cum := 0
	for v := 1; v < 256; v++ {
		cum += hist[v-1]
		lut[v] = uint8(min(255, (cum+step/2)/step))
	}
	for i, p := range src {
		dst[i] = lut[p]
	}
}
