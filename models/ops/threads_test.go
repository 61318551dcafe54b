package ops

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestParallelForCoversEachIndexOnce(t *testing.T) {
	defer SetThreads(0)
	for i, c := range []struct{ n, minWork, threads int }{
		{0, 1, 2}, {1, 1, 2}, {7, 1, 2}, {7, 1, 3}, {100, 30, 4}, {100, 200, 4}, {5, 0, 8}, {1000, 1, 1},
	} {
		SetThreads(c.threads)
		hits := make([]atomic.Int32, c.n)
		parallelFor(c.n, c.minWork, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				hits[j].Add(1)
			}
		})
		for j := range hits {
			if h := hits[j].Load(); h != 1 {
				t.Errorf("case %d: index %d visited %d times", i, j, h)
			}
		}
	}
}

func TestSetThreads(t *testing.T) {
	defer SetThreads(0)
	SetThreads(3)
	if got := Threads(); got != 3 {
		t.Errorf("after SetThreads(3): Threads() = %d", got)
	}
	SetThreads(-1)
	if got, want := Threads(), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("after SetThreads(-1): Threads() = %d, want GOMAXPROCS %d", got, want)
	}
}

// TestThreadCountsAgree runs a conv-BN-ReLU-pool block on one and on three goroutines: splitting the work
// must not change the results beyond float32 rounding of the matrix products (16 images and 16 filters are
// enough for gemm to split every product).
func TestThreadCountsAgree(t *testing.T) {
	defer SetThreads(0)
	rng := rand.New(rand.NewPCG(12, 13))
	inputs := []*tensor.Dense{fashionBatch(t, 16), randDense(rng, 16, 1, 3, 3), randDense(rng, 16), randDense(rng, 16)}
	block := func(in []*G.Node) (*G.Node, error) {
		h, err := nonLeaf(in[0])
		if err != nil {
			return nil, err
		}
		if h, err = Conv2d(h, in[1], 1, 1); err != nil {
			return nil, err
		}
		if h, err = NewBatchNorm(16).Apply(h, in[2], in[3], true, true); err != nil {
			return nil, err
		}
		return MaxPool2(h)
	}
	var outs [2][]float64
	var grads [2][][]float64
	for i, threads := range []int{1, 3} {
		SetThreads(threads)
		var err error
		if outs[i], grads[i], err = evalWithGrads(inputs, tensor.Float32, block); err != nil {
			t.Fatal(err)
		}
	}
	assertClose(t, "output", outs[1], outs[0], 1e-6)
	for i := range inputs {
		assertClose(t, fmt.Sprintf("gradient %d", i), grads[1][i], grads[0][i], 1e-5)
	}
}
