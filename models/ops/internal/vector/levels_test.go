package vector

import "testing"

// forEachLevel runs test as a subtest once per kernel set the processor runs: the AVX2 kernels, and the
// AVX-512 ones where HasAVX512 is set (not under LevelEnv=avx2), restoring HasAVX512 afterwards.
func forEachLevel(t *testing.T, test func(t *testing.T)) {
	t.Helper()
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	saved := HasAVX512
	defer func() { HasAVX512 = saved }()
	levels := []bool{false}
	if saved {
		levels = append(levels, true)
	}
	for _, on := range levels {
		HasAVX512 = on
		name := "AVX2"
		if on {
			name = "AVX512"
		}
		t.Run(name, test)
	}
}

// BenchmarkElementwise times each element-wise kernel at each kernel set the processor runs, on one
// channel of the default backbone's first batch-norm input (batch 128, 28x28: 100352 values, 392 KB).
func BenchmarkElementwise(b *testing.B) {
	if !HasAVX2 {
		b.Skip("no AVX2 and FMA")
	}
	const n = 128 * 28 * 28
	x, y, g, d := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i], g[i] = float32(i%7)-3, float32(i%5), float32(i%3)-1
	}
	saved := HasAVX512
	defer func() { HasAVX512 = saved }()
	levels := map[string]bool{"AVX2": false}
	if saved {
		levels["AVX512"] = true
	}
	for _, kernel := range []struct {
		name string
		run  func()
	}{
		{"Sum", func() { Sum(x) }},
		{"SumSquaredDev", func() { SumSquaredDev(x, 0.5) }},
		{"Affine", func() { Affine(d, x, 1.5, 0.25, true) }},
		{"KeepWherePositive", func() { KeepWherePositive(d, y, g) }},
		{"SumAndDot", func() { SumAndDot(g, x, 0.5) }},
		{"Affine2", func() { Affine2(d, g, x, 1.5, 0.25, 0.125) }},
		{"AddTo", func() { AddTo(d, g) }},
	} {
		for _, level := range []string{"AVX2", "AVX512"} {
			on, ok := levels[level]
			if !ok {
				continue
			}
			b.Run(kernel.name+"/"+level, func(b *testing.B) {
				HasAVX512 = on
				b.SetBytes(4 * n)
				for b.Loop() {
					kernel.run()
				}
			})
		}
	}
}
