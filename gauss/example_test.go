package gauss_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bicyc/bicyc/gauss"
	"gonum.org/v1/gonum/mat"
)

func ExampleEstimate() {
	// Three features of dimension 2, one per row.
	x := []float32{1, 2, 3, 2, 5, 8}
	g, err := gauss.Estimate(x, 3, 2)
	if err != nil {
		panic(err)
	}
	fmt.Printf("mean %v\ncov %.4g\n", g.Mean, mat.Formatted(g.Cov, mat.Squeeze()))

	// One image is not enough for a covariance: fall back to a diagonal.
	_, err = gauss.Estimate(x[:2], 1, 2)
	fmt.Println(errors.Is(err, gauss.ErrTooFewSamples))
	one, _ := gauss.EstimateDiagonal(x[:2], 1, 2, gauss.MeanVariance([]gauss.Gaussian{g}))
	fmt.Printf("fallback cov %.4g\n", mat.Formatted(one.Cov, mat.Squeeze()))
	// Output:
	// mean [3 4]
	// cov ⎡4   6⎤
	// ⎣6  12⎦
	// true
	// fallback cov ⎡8  0⎤
	// ⎣0  8⎦
}

func ExampleCholesky() {
	// Eigenvalues -1 and 3: no jitter helps, the eigenvalues are floored.
	indefinite := mat.NewSymDense(2, []float64{1, 2, 2, 1})
	_, how, err := gauss.Cholesky(indefinite)
	fmt.Println(how, err)
	// Output: eigen-floored <nil>
}

func ExampleTransport() {
	g := gauss.Gaussian{Mean: []float64{1, -1}, Cov: mat.NewSymDense(2, []float64{1, 0, 0, 4})}
	// The adapter here doubles every feature: the result is N(2 mu, 4 Sigma).
	double := func(x []float32, n int) ([]float32, error) {
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = 2 * v
		}
		return out, nil
	}
	moved, err := gauss.Transport(g, double, 100000, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	fmt.Printf("mean %.1f\nvariances %.1f %.1f\n", moved.Mean, moved.Cov.At(0, 0), moved.Cov.At(1, 1))
	// Output:
	// mean [2.0 -2.0]
	// variances 4.0 16.0
}

func ExampleClassifier_Predict() {
	protos := []gauss.Gaussian{
		{Mean: []float64{-2, 0}, Cov: mat.NewSymDense(2, []float64{1, 0, 0, 1})},
		{Mean: []float64{2, 0}, Cov: mat.NewSymDense(2, []float64{1, 0, 0, 1})},
		{Mean: []float64{0, 3}, Cov: mat.NewSymDense(2, []float64{1, 0, 0, 1})},
	}
	cl, err := gauss.NewClassifier(protos, nil, gauss.DefaultClassifierOptions())
	if err != nil {
		panic(err)
	}
	z := []float32{-1.5, 0.3, 1.8, -0.2, 0.2, 2.5}
	fmt.Println("task-agnostic:", cl.Predict(z, 3, nil))
	fmt.Println("task {0, 1}:  ", cl.Predict(z, 3, []int{0, 1}))
	t := cl.Tables()
	fmt.Println("tables:", t.K, "classes,", t.S, "dims, normalized:", t.Normalize)
	// Output:
	// task-agnostic: [0 1 2]
	// task {0, 1}:   [0 1 1]
	// tables: 3 classes, 2 dims, normalized: true
}

// ExampleClassifierOptions_Validate checks options read from outside, as
// config, bundle and infer do: every problem at once, each naming its key.
func ExampleClassifierOptions_Validate() {
	opts := gauss.DefaultClassifierOptions()
	opts.Shrink = math.NaN()
	opts.PoolCov = 2
	err := opts.Validate()
	fmt.Println(errors.Is(err, gauss.ErrOptions))
	fmt.Println(err)
	fmt.Println(gauss.ValidateAcceptRate(math.Inf(1)))
	// Output:
	// true
	// shrink NaN, want a finite value >= 0
	// pool_cov 2, want a value in [0, 1]
	// accept_rate +Inf, want a value in (0, 1]
}
