package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestStockMulSplitsAcrossGoroutines checks that after UseOpenBLAS (TestMain) a stock G.Mul, forward and
// backward, runs through splitBLAS and agrees with a float64 reference, for products large enough to be split
// by rows and by columns.
func TestStockMulSplitsAcrossGoroutines(t *testing.T) {
	defer SetThreads(0)
	if _, ok := G.WhichBLAS().(splitBLAS); !ok {
		t.Fatalf("gorgonia's BLAS is %T, want splitBLAS", G.WhichBLAS())
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for _, threads := range []int{1, 2, 3} {
		SetThreads(threads)
		for i, c := range []struct{ m, k, n int }{{128, 64, 2048}, {2048, 64, 128}, {3, 5, 7}} {
			t.Run(fmt.Sprintf("threads%d/case%d", threads, i), func(t *testing.T) {
				a, b := randDense(rng, c.m, c.k), randDense(rng, c.k, c.n)
				mul := func(in []*G.Node) (*G.Node, error) { return G.Mul(in[0], in[1]) }
				want, wantGrads, err := evalWithGrads([]*tensor.Dense{a, b}, tensor.Float64, mul)
				if err != nil {
					t.Fatal(err)
				}
				got, gotGrads, err := evalWithGrads([]*tensor.Dense{a, b}, tensor.Float32, mul)
				if err != nil {
					t.Fatal(err)
				}
				assertClose(t, "product", got, want, 1e-6)
				for j := range gotGrads {
					assertClose(t, fmt.Sprintf("gradient %d", j), gotGrads[j], wantGrads[j], 1e-6)
				}
			})
		}
	}
}
