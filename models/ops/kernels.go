package ops

import "math"

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

// addTo adds s to d element-wise; d has at least len(s) elements.
func addTo[T float](d, s []T) {
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
