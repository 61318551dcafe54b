package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The expected images below were worked out by hand from the formulas in
// AugmentOp.Apply's documentation and confirmed with torchvision 0.14.1's
// _apply_op on the same uint8 tensors.

// TestAugmentOpHandComputed applies each operation to a tiny image.
func TestAugmentOpHandComputed(t *testing.T) {
	ramp12 := []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} // 1x3x4
	ramp16 := []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	white16 := slices.Repeat([]uint8{255}, 16)
	cornersOff := []uint8{0, 255, 255, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0, 255, 255, 0}
	border13 := []uint8{13, 13, 13, 13, 26, 13, 13, 13, 13}
	cases := []struct {
		op      AugmentOp
		m       float64
		src     []uint8
		c, h, w int
		want    []uint8
	}{
		{OpIdentity, 7, ramp12, 1, 3, 4, ramp12},
		// int(1.5) = 1 pixel right, 1 left, 2 down; uncovered pixels are 0.
		{OpTranslateX, 1.5, ramp12, 1, 3, 4, []uint8{0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11}},
		{OpTranslateX, -1, ramp12, 1, 3, 4, []uint8{2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12, 0}},
		{OpTranslateY, 2, ramp12, 1, 3, 4, []uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}},
		// Pixel centre (x+0.5, y+0.5) samples x + 0.5*(y+0.5): rows shift
		// left by round(0.25, 0.75, 1.25, 1.75) = 0, 1, 1, 2.
		{OpShearX, 0.5, ramp16, 1, 4, 4, []uint8{1, 2, 3, 4, 6, 7, 8, 0, 10, 11, 12, 0, 15, 16, 0, 0}},
		{OpShearX, -0.5, ramp16, 1, 4, 4, []uint8{1, 2, 3, 4, 0, 5, 6, 7, 0, 9, 10, 11, 0, 0, 13, 14}},
		{OpShearY, 0.5, ramp16, 1, 4, 4, []uint8{1, 6, 7, 12, 5, 10, 11, 16, 9, 14, 15, 0, 13, 0, 0, 0}},
		// Corner centres of a 4x4 image lie 2.12 px from the centre; turned
		// by 45 degrees they land 2.12 px along an axis, outside the image.
		{OpRotate, 45, white16, 1, 4, 4, cornersOff},
		{OpRotate, -45, white16, 1, 4, 4, cornersOff},
		{OpRotate, 135, white16, 1, 4, 4, cornersOff},
		{OpRotate, 90, ramp16[:9], 1, 3, 3, []uint8{3, 6, 9, 2, 5, 8, 1, 4, 7}},
		// f*p truncated: 1.5*200 = 300 clamps to 255, 1.33*100 = 133.
		{OpBrightness, 0.5, []uint8{0, 10, 100, 200}, 1, 1, 4, []uint8{0, 15, 150, 255}},
		{OpBrightness, -0.5, []uint8{0, 10, 100, 200}, 1, 1, 4, []uint8{0, 5, 50, 100}},
		{OpBrightness, -1, []uint8{0, 10, 100, 200}, 1, 1, 4, []uint8{0, 0, 0, 0}},
		{OpBrightness, 0.33, []uint8{0, 10, 100, 200}, 1, 1, 4, []uint8{0, 13, 133, 255}},
		// Gray of (200, 100, 50) = trunc(59.78 + 58.7 + 5.7) = 124;
		// f = 1.5: 1.5*p - 0.5*124; f = 0.5: 0.5*p + 62.
		{OpColor, -1, []uint8{200, 100, 50}, 3, 1, 1, []uint8{124, 124, 124}},
		{OpColor, 0.5, []uint8{200, 100, 50}, 3, 1, 1, []uint8{238, 88, 13}},
		{OpColor, -0.5, []uint8{200, 100, 50}, 3, 1, 1, []uint8{162, 112, 87}},
		{OpColor, 0.9, []uint8{1, 50, 200}, 1, 1, 3, []uint8{1, 50, 200}},
		// Mean 100: 2p - 100 and 0.5p + 50.
		{OpContrast, 1, []uint8{0, 100, 100, 200}, 1, 2, 2, []uint8{0, 100, 100, 255}},
		{OpContrast, -0.5, []uint8{0, 100, 100, 200}, 1, 2, 2, []uint8{50, 100, 100, 150}},
		// A gray RGB pixel 100 has gray level trunc(99.99) = 99.
		{OpContrast, -1, slices.Repeat([]uint8{100}, 12), 3, 2, 2, slices.Repeat([]uint8{99}, 12)},
		// Centre smoothed: round((8*13 + 5*26)/13) = 18; f = 2: 52 - 18.
		// The border blends with itself.
		{OpSharpness, 1, border13, 1, 3, 3, []uint8{13, 13, 13, 13, 34, 13, 13, 13, 13}},
		{OpSharpness, -1, border13, 1, 3, 3, []uint8{13, 13, 13, 13, 18, 13, 13, 13, 13}},
		{OpSharpness, 0.9, ramp12[:10], 1, 2, 5, ramp12[:10]},
		// int(2.9) = 2 bits: mask 0b11000000.
		{OpPosterize, 2.9, []uint8{255, 100, 63, 64}, 1, 1, 4, []uint8{192, 64, 0, 64}},
		{OpPosterize, 8, []uint8{255, 100, 63, 64}, 1, 1, 4, []uint8{255, 100, 63, 64}},
		{OpPosterize, 0, []uint8{255, 100, 63, 64}, 1, 1, 4, []uint8{0, 0, 0, 0}},
		{OpSolarize, 128, []uint8{0, 127, 128, 255}, 1, 1, 4, []uint8{0, 127, 127, 0}},
		{OpSolarize, 127.5, []uint8{0, 127, 128, 255}, 1, 1, 4, []uint8{0, 127, 127, 0}},
		{OpSolarize, 255, []uint8{0, 127, 128, 255}, 1, 1, 4, []uint8{0, 127, 128, 0}},
		{OpSolarize, 0, []uint8{0, 127, 128, 255}, 1, 1, 4, []uint8{255, 128, 127, 0}},
		// Per channel: [50, 150] and [0, 2] stretch to [0, 255]
		// (50*2.55 = 127.5 truncates); the constant channel stays.
		{OpAutoContrast, 0, []uint8{50, 100, 150, 7, 7, 7, 0, 1, 2}, 3, 1, 3, []uint8{0, 127, 255, 7, 7, 7, 0, 127, 255}},
		// Under 256 pixels the step is 0: unchanged.
		{OpEqualize, 0, []uint8{0, 10, 20, 200}, 1, 2, 2, []uint8{0, 10, 20, 200}},
	}
	for i, tc := range cases {
		dst := make([]uint8, len(tc.src))
		tc.op.Apply(tc.m, tc.src, dst, tc.c, tc.h, tc.w)
		if !slices.Equal(dst, tc.want) {
			t.Errorf("case %d: %s(%g) = %v, want %v", i, tc.op, tc.m, dst, tc.want)
		}
	}
}

// TestEqualizeHandComputed equalises 300 pixels of 0, 255 of 100 and 300
// of 200 in one channel of an RGB image: step = (300+255)/255 = 2, so
// lut[100] = (300+1)/2 = 150 and lut[200] = min(255, (555+1)/2) = 255. The
// constant channel is kept and the third, the same values in reverse
// order, maps the same way.
func TestEqualizeHandComputed(t *testing.T) {
	const h, w = 19, 45
	plane := slices.Concat(slices.Repeat([]uint8{0}, 300), slices.Repeat([]uint8{100}, 255), slices.Repeat([]uint8{200}, 300))
	reversed := slices.Clone(plane)
	slices.Reverse(reversed)
	src := slices.Concat(plane, slices.Repeat([]uint8{5}, h*w), reversed)
	dst := make([]uint8, len(src))
	OpEqualize.Apply(0, src, dst, 3, h, w)
	lut := map[uint8]uint8{0: 0, 100: 150, 200: 255}
	for i, p := range src {
		want := lut[p]
		if i >= h*w && i < 2*h*w {
			want = 5
		}
		if dst[i] != want {
			t.Fatalf("pixel %d: %d -> %d, want %d", i, p, dst[i], want)
		}
	}
}

// TestRotateQuarterTurnsMatchRotate90 checks that turns by multiples of 90
// degrees about the centre move whole pixels, as Rotate90 does, on square
// images of odd and even size.
func TestRotateQuarterTurnsMatchRotate90(t *testing.T) {
	for i, n := range []int{3, 4, 5, 32} {
		src := numbered(3, n, n)
		got, want := make([]uint8, len(src)), make([]uint8, len(src))
		for _, k := range []int{-1, 1, 2} {
			OpRotate.Apply(float64(90*k), src, got, 3, n, n)
			Rotate90(src, want, 3, n, n, k)
			if !slices.Equal(got, want) {
				t.Errorf("case %d: %dx%d rotated by %d degrees differs from Rotate90(k=%d)", i, n, n, 90*k, k)
			}
		}
	}
}

// TestWideMagnitudeTable checks the endpoints and steps of the wide table
// (torchvision's _augmentation_space of TrivialAugmentWide).
func TestWideMagnitudeTable(t *testing.T) {
	last := TrivialAugmentBins - 1
	cases := []struct {
		op          AugmentOp
		first, last float64
	}{
		{OpIdentity, 0, 0},
		{OpShearX, 0, float64(float32(0.99))},
		{OpShearY, 0, float64(float32(0.99))},
		{OpTranslateX, 0, 32},
		{OpTranslateY, 0, 32},
		{OpRotate, 0, 135},
		{OpBrightness, 0, float64(float32(0.99))},
		{OpColor, 0, float64(float32(0.99))},
		{OpContrast, 0, float64(float32(0.99))},
		{OpSharpness, 0, float64(float32(0.99))},
		{OpPosterize, 8, 2},
		{OpSolarize, 255, 0},
		{OpAutoContrast, 0, 0},
		{OpEqualize, 0, 0},
	}
	for i, tc := range cases {
		if got0, gotN := tc.op.WideMagnitude(0), tc.op.WideMagnitude(last); got0 != tc.first || gotN != tc.last {
			t.Errorf("case %d: %s bins 0 and %d: %g and %g, want %g and %g", i, tc.op, last, got0, gotN, tc.first, tc.last)
		}
	}
	var bits, shifts []int
	for bin := range TrivialAugmentBins {
		bits = append(bits, int(OpPosterize.WideMagnitude(bin)))
		shifts = append(shifts, int(OpTranslateX.WideMagnitude(bin)))
		if d, want := OpSharpness.WideMagnitude(bin), 0.99*float64(bin)/30; d-want > 1e-7 || want-d > 1e-7 {
			t.Errorf("Sharpness bin %d: %g, want about %g", bin, d, want)
		}
	}
	wantBits := []int{8, 8, 8, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 2, 2, 2}
	wantShifts := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 32}
	if !slices.Equal(bits, wantBits) || !slices.Equal(shifts, wantShifts) {
		t.Errorf("posterize bits %v, translate pixels %v", bits, shifts)
	}
	if OpRotate.WideMagnitude(20) != 90 || OpSolarize.WideMagnitude(15) != 127.5 {
		t.Errorf("rotate bin 20 = %g, solarize bin 15 = %g", OpRotate.WideMagnitude(20), OpSolarize.WideMagnitude(15))
	}
}

// TestTrivialAugmentWideDraws checks, over 14000 draws with a fixed seed,
// that every operation comes up 1000 ± 120 times (about 4 standard
// deviations), bins and signs are spread, the returned magnitude is the
// table's, and the draws are the operation, the bin, then the sign.
func TestTrivialAugmentWideDraws(t *testing.T) {
	const draws = 14000
	src := numbered(3, 8, 8)
	dst := make([]uint8, len(src))
	rng := rand.New(rand.NewPCG(3, 4))
	replay := rand.New(rand.NewPCG(3, 4))
	opCount := make([]int, numAugmentOps)
	binCount := make([]int, TrivialAugmentBins)
	negative, signed := 0, 0
	for i := range draws {
		op, m := TrivialAugmentWide(rng, src, dst, 3, 8, 8)
		wantOp := AugmentOp(replay.IntN(numAugmentOps))
		wantM := 0.0
		if wantOp.hasBins() {
			bin := replay.IntN(TrivialAugmentBins)
			binCount[bin]++
			wantM = wantOp.WideMagnitude(bin)
		}
		if wantOp.signed() {
			signed++
			if replay.IntN(2) == 1 {
				wantM = -wantM
				negative++
			}
		}
		if op != wantOp || m != wantM {
			t.Fatalf("draw %d: got %s(%g), replaying the draws gives %s(%g)", i, op, m, wantOp, wantM)
		}
		want := make([]uint8, len(src))
		op.Apply(m, src, want, 3, 8, 8)
		if !slices.Equal(dst, want) {
			t.Fatalf("draw %d: output is not %s(%g) of the input", i, op, m)
		}
		opCount[op]++
	}
	for op, n := range opCount {
		if n < 880 || n > 1120 {
			t.Errorf("%s drawn %d times of %d, want about %d", AugmentOp(op), n, draws, draws/numAugmentOps)
		}
	}
	// 11 of 14 operations have bins: about 11000/31 = 355 per bin.
	for bin, n := range binCount {
		if n < 270 || n > 440 {
			t.Errorf("bin %d drawn %d times", bin, n)
		}
	}
	if negative < signed/2-250 || negative > signed/2+250 {
		t.Errorf("%d of %d signed magnitudes negative", negative, signed)
	}
}

// TestTrivialAugmentWideDeterministic checks that a seed fixes the outputs
// and that another seed changes them, on gray and RGB images.
func TestTrivialAugmentWideDeterministic(t *testing.T) {
	for i, c := range []int{1, 3} {
		src := numbered(c, 10, 12)
		run := func(seed uint64) []uint8 {
			rng := rand.New(rand.NewPCG(seed, 0))
			var out []uint8
			dst := make([]uint8, len(src))
			for range 50 {
				TrivialAugmentWide(rng, src, dst, c, 10, 12)
				out = append(out, dst...)
			}
			return out
		}
		a, b, other := run(1), run(1), run(2)
		if !slices.Equal(a, b) || slices.Equal(a, other) {
			t.Errorf("case %d (%d channels): same seed equal %v, other seed equal %v", i, c, slices.Equal(a, b), slices.Equal(a, other))
		}
	}
}

// TestAugmentOpInPlace checks that dst == src gives the same image as a
// separate dst for every operation, including those that read neighbours.
func TestAugmentOpInPlace(t *testing.T) {
	src := numbered(3, 7, 9)
	for op := range AugmentOp(numAugmentOps) {
		for _, bin := range []int{7, 30} {
			m := -op.WideMagnitude(bin)
			if !op.signed() {
				m = -m
			}
			want := make([]uint8, len(src))
			op.Apply(m, src, want, 3, 7, 9)
			got := slices.Clone(src)
			op.Apply(m, got, got, 3, 7, 9)
			if !slices.Equal(got, want) {
				t.Errorf("%s(%g) in place differs", op, m)
			}
		}
	}
}

// TestAugmentWithTrivialAugment checks that Augment applies the crop, the
// flip and then TrivialAugmentWide, drawing in that order from one rng.
func TestAugmentWithTrivialAugment(t *testing.T) {
	const c, h, w = 3, 8, 8
	src := numbered(c, h, w)
	a := Augment{CropPadding: 2, HorizontalFlip: true, TrivialAugment: true}
	if !a.Enabled() || !(Augment{TrivialAugment: true}).Enabled() {
		t.Fatal("Augment with TrivialAugment reports itself disabled")
	}
	rng, replay := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	got, want := make([]uint8, len(src)), make([]uint8, len(src))
	changed := 0
	for i := range 300 {
		a.Apply(rng, src, got, c, h, w)
		Augment{CropPadding: 2, HorizontalFlip: true}.Apply(replay, src, want, c, h, w)
		cropped := slices.Clone(want)
		TrivialAugmentWide(replay, want, want, c, h, w)
		if !slices.Equal(got, want) {
			t.Fatalf("draw %d: Augment differs from crop, flip, then TrivialAugmentWide", i)
		}
		if !slices.Equal(got, cropped) {
			changed++
		}
	}
	if changed == 0 {
		t.Error("TrivialAugmentWide never changed an image")
	}
}

// TestTrivialAugmentPanics checks the programmer-misuse panics.
func TestTrivialAugmentPanics(t *testing.T) {
	img := numbered(3, 4, 4)
	rng := rand.New(rand.NewPCG(0, 0))
	cases := []struct {
		want string
		call func()
	}{
		{"2 channels", func() { OpIdentity.Apply(0, img, img, 2, 4, 4) }},
		{"needs 48 values", func() { OpRotate.Apply(10, img[:40], make([]uint8, 48), 3, 4, 4) }},
		{"needs 48 values", func() { TrivialAugmentWide(rng, img, make([]uint8, 47), 3, 4, 4) }},
		{"9 bits", func() { OpPosterize.Apply(9, img, img, 3, 4, 4) }},
		{"-1 bits", func() { OpPosterize.Apply(-1, img, img, 3, 4, 4) }},
		{"threshold 256", func() { OpSolarize.Apply(256, img, img, 3, 4, 4) }},
		{"negative", func() { OpBrightness.Apply(-1.5, img, img, 3, 4, 4) }},
		{"negative", func() { OpSharpness.Apply(-2, img, img, 3, 4, 4) }},
		{"unknown operation 14", func() { AugmentOp(14).Apply(0, img, img, 3, 4, 4) }},
		{"bin 31", func() { OpRotate.WideMagnitude(31) }},
		{"bin -1", func() { OpIdentity.WideMagnitude(-1) }},
		{"TrivialAugment needs 1 or 3 channels, got 4", func() {
			Augment{TrivialAugment: true}.Apply(rng, make([]uint8, 64), make([]uint8, 64), 4, 4, 4)
		}},
	}
	for i, tc := range cases {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.HasPrefix(msg, "data: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("case %d: panic %q, want one mentioning %q", i, msg, tc.want)
				}
			}()
			tc.call()
		}()
	}
	if s := AugmentOp(20).String(); s != "AugmentOp(20)" {
		t.Errorf("String of an unknown operation: %q", s)
	}
}

func BenchmarkTrivialAugmentWide(b *testing.B) {
	src := numbered(3, 32, 32)
	dst := make([]uint8, len(src))
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		TrivialAugmentWide(rng, src, dst, 3, 32, 32)
	}
}
