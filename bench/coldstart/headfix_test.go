package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/gauss"
)

// TestMixScoresIsTheProductOption holds the grid's memoized mixture to the
// product's classifier.gaussian_weight, so that the study's numbers are the
// option's.
func TestMixScoresIsTheProductOption(t *testing.T) {
	const s, k, n = 6, 4, 9
	rng := rand.New(rand.NewPCG(3, 4))
	in := input{ids: []int{0, 1, 2, 3}, ages: []int{3, 2, 1, 0}, n: n, s: s, memo: map[string][]float32{}}
	for c := range k {
		mean := make([]float64, s)
		for j := range mean {
			mean[j] = rng.NormFloat64()
		}
		a := mat.NewDense(s, s, nil)
		for i := range s {
			for j := range s {
				a.Set(i, j, 0.3*rng.NormFloat64())
			}
		}
		var cov mat.SymDense
		cov.SymOuterK(1, a)
		for i := range s {
			cov.SetSym(i, i, cov.At(i, i)+0.5+0.1*float64(c))
		}
		in.protos = append(in.protos, gauss.Gaussian{Mean: mean, Cov: &cov})
	}
	in.z = make([]float32, 2*n*s)
	for i := range in.z {
		in.z[i] = float32(rng.NormFloat64())
	}
	for _, p := range []struct{ lambda, b float64 }{{5, -0.2}, {10, -0.3}, {0, -0.1}} {
		got, err := mixScores(in, p.lambda, p.b)
		if err != nil {
			t.Fatal(err)
		}
		o := gauss.DefaultClassifierOptions()
		o.Head, o.AgeBias, o.GaussianWeight = gauss.HeadSoftmax, p.b, p.lambda
		want, err := optionScores(in, o, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("lambda %g b %g: %d scores, want %d", p.lambda, p.b, len(got), len(want))
		}
		for i := range want {
			// The product folds both parts into one quadratic form per class,
			// so the sums differ in rounding only: measured up to 1.2e-7 of 1+|score|
			// under the default, purego and Prescott kernels.
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("lambda %g b %g: score %d is %g, the product's option gives %g", p.lambda, p.b, i, got[i], want[i])
			}
		}
	}
}
