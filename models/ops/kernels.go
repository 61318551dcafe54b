package ops

import (
	"math"

	"github.com/bicyc/bicyc/models/ops/internal/vector"
)

// The functions without a digit suffix run the AVX2 kernels of package internal/vector on the part of float32
// slices whose length is a multiple of 8 when the processor has AVX2 and FMA, and the portable loops below on
// the rest. The kernels sum in eight lanes and fuse multiply-adds, so float32 results may differ from the
// portable loops' by rounding.

// sum returns Σ v.
func sum[T float](v []T) T {
	if v32, ok := any(v).([]float32); ok && vector.HasAVX2 {
		n := len(v32) &^ 7
		return T(vector.Sum(v32[:n]) + sum4(v32[n:]))
	}
	return sum4(v)
}

// sumSquaredDev returns Σ (v-m)².
func sumSquaredDev[T float](v []T, m T) T {
	if v32, ok := any(v).([]float32); ok && vector.HasAVX2 {
		n := len(v32) &^ 7
		return T(vector.SumSquaredDev(v32[:n], float32(m)) + sumSquaredDev4(v32[n:], float32(m)))
	}
	return sumSquaredDev4(v, m)
}

// sumAndDot returns Σ g and Σ g·(x-m); x has at least len(g) elements.
func sumAndDot[T float](g, x []T, m T) (sumG, sumGX T) {
	if g32, ok := any(g).([]float32); ok && vector.HasAVX2 {
		x32 := any(x).([]float32)
		n := len(g32) &^ 7
		s, d := vector.SumAndDot(g32[:n], x32[:n], float32(m))
		s4, d4 := sumAndDot4(g32[n:], x32[n:len(g32)], float32(m))
		return T(s + s4), T(d + d4)
	}
	return sumAndDot4(g, x, m)
}

// maskByPositive is keepWherePositive: g = dy where y > 0, 0 where y == 0, for a ReLU output y.
func maskByPositive[T float](y, dy, g []T) {
	if y32, ok := any(y).([]float32); ok && vector.HasAVX2 {
		dy32, g32 := any(dy).([]float32)[:len(y32)], any(g).([]float32)[:len(y32)]
		n := len(y32) &^ 7
		vector.KeepWherePositive(g32[:n], y32[:n], dy32[:n])
		keepWherePositive(y32[n:], dy32[n:], g32[n:])
		return
	}
	keepWherePositive(y, dy, g)
}

// addTo adds s to d element-wise; d has at least len(s) elements.
func addTo[T float](d, s []T) {
	if s32, ok := any(s).([]float32); ok && vector.HasAVX2 {
		d32 := any(d).([]float32)[:len(s32)]
		n := len(s32) &^ 7
		vector.AddTo(d32[:n], s32[:n])
		addTo4(d32[n:], s32[n:])
		return
	}
	addTo4(d, s)
}

// affine writes y = a·x + b, then max(y, 0) if relu; y has at least len(x) elements and may be x.
func affine[T float](y, x []T, a, b T, relu bool) {
	y = y[:len(x)]
	n := 0
	if x32, ok := any(x).([]float32); ok && vector.HasAVX2 {
		n = len(x32) &^ 7
		vector.Affine(any(y).([]float32)[:n], x32[:n], float32(a), float32(b), relu)
	}
	if relu {
		for j, v := range x[n:] {
			y[n+j] = max(a*v+b, 0)
		}
		return
	}
	for j, v := range x[n:] {
		y[n+j] = a*v + b
	}
}

// affine2 writes d = a·g + b·x + k; d, g and x have the same length, and d may be g or x.
func affine2[T float](d, g, x []T, a, b, k T) {
	n := 0
	if d32, ok := any(d).([]float32); ok && vector.HasAVX2 {
		n = len(d32) &^ 7
		vector.Affine2(d32[:n], any(g).([]float32)[:n], any(x).([]float32)[:n], float32(a), float32(b), float32(k))
	}
	g, x = g[:len(d)], x[:len(d)]
	for j := n; j < len(d); j++ {
		d[j] = a*g[j] + b*x[j] + k
	}
}

// The loops below keep four independent accumulators so that additions pipeline instead of waiting on one
// another, and avoid data-dependent branches: ReLU masks and max-pool winners are close to random, and a
// mispredicted branch per element made these loops about four times slower.

// sum4 returns Σ v.
func sum4[T float](v []T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(v); i += 4 {
		q := v[i : i+4 : i+4]
		s0 += q[0]
		s1 += q[1]
		s2 += q[2]
		s3 += q[3]
	}
	for ; i < len(v); i++ {
		s0 += v[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSquaredDev4 returns Σ (v-m)².
func sumSquaredDev4[T float](v []T, m T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(v); i += 4 {
		q := v[i : i+4 : i+4]
		d0, d1, d2, d3 := q[0]-m, q[1]-m, q[2]-m, q[3]-m
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(v); i++ {
		d := v[i] - m
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// sumAndDot4 returns Σ g and Σ g·(x-m); x has at least len(g) elements.
func sumAndDot4[T float](g, x []T, m T) (sumG, sumGX T) {
	var s0, s1, t0, t1 T
	x = x[:len(g)]
	i := 0
	for ; i+2 <= len(g); i += 2 {
		p, q := g[i:i+2:i+2], x[i:i+2:i+2]
		s0 += p[0]
		s1 += p[1]
		t0 += p[0] * (q[0] - m)
		t1 += p[1] * (q[1] - m)
	}
	for ; i < len(g); i++ {
		s0 += g[i]
		t0 += g[i] * (x[i] - m)
	}
	return s0 + s1, t0 + t1
}

// keepWherePositive writes g[j] = dy[j] where y[j] > 0 and g[j] = 0 where y[j] == 0, for y >= 0 (a ReLU
// output, which is never -0), by masking the bits of dy with "y is not +0". g may be dy.
func keepWherePositive[T float](y, dy, g []T) {
	switch y := any(y).(type) {
	case []float32:
		dy, g := any(dy).([]float32)[:len(y)], any(g).([]float32)[:len(y)]
		for j, v := range y {
			b := math.Float32bits(v)
			mask := uint32(int32(b|-b) >> 31) // all ones unless b == 0
			g[j] = math.Float32frombits(math.Float32bits(dy[j]) & mask)
		}
	case []float64:
		dy, g := any(dy).([]float64)[:len(y)], any(g).([]float64)[:len(y)]
		for j, v := range y {
			b := math.Float64bits(v)
			mask := uint64(int64(b|-b) >> 63)
			g[j] = math.Float64frombits(math.Float64bits(dy[j]) & mask)
		}
	}
}

// addTo4 adds s to d element-wise; d has at least len(s) elements.
func addTo4[T float](d, s []T) {
	d = d[:len(s)]
	i := 0
	for ; i+4 <= len(s); i += 4 {
		p, q := d[i:i+4:i+4], s[i:i+4:i+4]
		p[0] += q[0]
		p[1] += q[1]
		p[2] += q[2]
		p[3] += q[3]
	}
	for ; i < len(s); i++ {
		d[i] += s[i]
	}
}

// clearEdges zeroes d[:first] and d[last:]; the edges are a few elements wide, too short for a memclr call to
// pay off.
func clearEdges[T float](d []T, first, last int) {
	for j := 0; j < first; j++ {
		d[j] = 0
	}
	for j := last; j < len(d); j++ {
		d[j] = 0
	}
}

// VectorKernels names the element-wise kernels the ops run: the AVX-512 and AVX2/FMA assembly of
// internal/vector where the processor has AVX-512 F (unless BICYC_VECTOR=avx2), the AVX2/FMA assembly
// where it has that, portable Go otherwise or under -tags purego.
func VectorKernels() string {
	switch {
	case vector.HasAVX512:
		return "AVX-512 assembly (AVX2+FMA where a kernel has no AVX-512 version)"
	case vector.HasAVX2:
		return "AVX2+FMA assembly"
	}
	return "portable Go"
}
