package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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
		h, err := convBNReLU(in, 16)
		if err != nil {
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

// convBNReLU is the blocks' common start: in[0] through a 3x3 convolution (stride 1, pad 1) with filters
// in[1], then batch norm over channels with gamma in[2] and beta in[3], in training mode, and a ReLU.
func convBNReLU(in []*G.Node, channels int) (*G.Node, error) {
	h, err := nonLeaf(in[0])
	if err != nil {
		return nil, err
	}
	if h, err = Conv2d(h, in[1], 1, 1); err != nil {
		return nil, err
	}
	return NewBatchNorm(channels).Apply(h, in[2], in[3], true, true)
}

// TestParallelEachRunsEachUnitOnce checks that parallelEach runs every unit exactly once, that each goroutine's
// start is paired with one end, and that no more goroutines start than workers.
func TestParallelEachRunsEachUnitOnce(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 2}, {1, 3}, {2, 2}, {7, 2}, {7, 3}, {100, 3}, {5, 8}, {64, 1}} {
		hits := make([]atomic.Int32, c.n)
		var starts, ends atomic.Int32
		parallelEach(c.n, c.workers, func() (func(int), func()) {
			starts.Add(1)
			return func(i int) { hits[i].Add(1) }, func() { ends.Add(1) }
		})
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Errorf("n %d, %d workers: unit %d ran %d times", c.n, c.workers, i, h)
			}
		}
		// A goroutine's end may run after parallelEach has returned.
		for deadline := time.Now().Add(5 * time.Second); ends.Load() != starts.Load() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if s, e := starts.Load(), ends.Load(); s != e || int(s) > max(1, c.workers) || (c.n > 0) != (s > 0) {
			t.Errorf("n %d, %d workers: %d starts, %d ends", c.n, c.workers, s, e)
		}
	}
}

// TestDynamicLoopsRepeatable runs blocks whose convolutions (F(4x4, 3x3) Winograd, im2col at stride 2, and an
// F(2x2, 3x3) filter gradient summed into one shared partial, whose two transforms run side by side) and batch
// norms hand their chunks, channels and filter blocks to goroutines as each finishes (parallelEach), on 2 and 3
// goroutines, several times: which goroutine computes a unit changes from run to run, the results must not
// change in a single bit.
func TestDynamicLoopsRepeatable(t *testing.T) {
	defer SetThreads(0)
	rng := rand.New(rand.NewPCG(21, 22))
	strided := []*tensor.Dense{randDense(rng, 12, 8, 16, 16), randDense(rng, 16, 8, 3, 3), randDense(rng, 16),
		randDense(rng, 16), randDense(rng, 16, 16, 3, 3)}
	stridedBlock := func(in []*G.Node) (*G.Node, error) {
		h, err := convBNReLU(in, 16)
		if err != nil {
			return nil, err
		}
		return Conv2d(h, in[4], 2, 1)
	}
	wide := []*tensor.Dense{randDense(rng, 12, 96, 4, 4), randDense(rng, 96, 96, 3, 3)}
	wideBlock := func(in []*G.Node) (*G.Node, error) {
		h, err := nonLeaf(in[0])
		if err != nil {
			return nil, err
		}
		return Conv2d(h, in[1], 1, 1)
	}
	wideGeom := convGeom{n: 12, c: 96, h: 4, w: 4, o: 96, k: 3, stride: 1, pad: 1, oh: 4, ow: 4}
	for _, threads := range []int{2, 3} {
		SetThreads(threads)
		if down, across := wideGeom.tiles(); wideGeom.winograd43() || !winogradSharedPartial(wideGeom, wideGeom.chunkingFor(winogradChunkColumns), down*across) {
			t.Fatalf("%d goroutines: %v does not take the F(2x2, 3x3) shared-partial filter gradient", threads, wideGeom)
		}
		for b, c := range []struct {
			inputs []*tensor.Dense
			block  func([]*G.Node) (*G.Node, error)
		}{{strided, stridedBlock}, {wide, wideBlock}} {
			var first []float64
			for run := range 4 {
				out, grads, err := evalWithGrads(c.inputs, tensor.Float32, c.block)
				if err != nil {
					t.Fatal(err)
				}
				all := out
				for _, g := range grads {
					all = append(all, g...)
				}
				if run == 0 {
					first = all
					continue
				}
				for i := range all {
					if math.Float64bits(all[i]) != math.Float64bits(first[i]) {
						t.Fatalf("block %d, %d goroutines, run %d: value %d is %v, first run %v", b, threads, run, i, all[i], first[i])
					}
				}
			}
		}
	}
}
