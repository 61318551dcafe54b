package compare

import (
	"math"
	"slices"
)

// Percentile returns the p-th percentile (0 <= p <= 100) of xs by the
// nearest-rank method on a sorted copy:
//
//	sorted[ceil(p/100 * n) - 1],  sorted[0] for p = 0
//
// It returns NaN for an empty xs and panics if p is outside [0, 100].
func Percentile(xs []float64, p float64) float64 {
	if p < 0 || p > 100 {
		panic("compare: percentile outside [0, 100]")
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank-1, 0)]
}

// Median returns the median of xs: the middle value, or the mean of the two
// middle values for an even count. It returns NaN for an empty xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
