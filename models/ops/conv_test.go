package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convCases cover the patch layouts: same padding (the block-shift path) on square and rectangular images and
// with a kernel larger than the image, stride 2 with and without padding, a kernel that overhangs the right
// edge, 1x1 (the regrouping path) and 1x1 with stride 2; the stride-2 3x3 (pad 1), 1x1 and 7x7 (pad 3)
// convolutions run the polyphase path (convGeom.phased), on even and odd sides.
var convCases = []struct {
	x, w        []int
	stride, pad int
}{
	{[]int{2, 3, 5, 5}, []int{4, 3, 3, 3}, 1, 1},
	{[]int{2, 2, 7, 6}, []int{3, 2, 3, 3}, 2, 0},
	{[]int{1, 2, 6, 7}, []int{2, 2, 3, 3}, 2, 1},
	{[]int{2, 1, 5, 4}, []int{2, 1, 2, 2}, 2, 1},
	{[]int{3, 4, 3, 3}, []int{5, 4, 1, 1}, 1, 0},
	{[]int{2, 3, 5, 5}, []int{2, 3, 1, 1}, 2, 0},
	{[]int{1, 2, 4, 4}, []int{3, 2, 5, 5}, 1, 2},
	{[]int{2, 2, 5, 7}, []int{3, 2, 3, 3}, 1, 1},
	{[]int{1, 1, 2, 3}, []int{2, 1, 5, 5}, 1, 2},
	{[]int{2, 3, 6, 5}, []int{4, 3, 3, 3}, 1, 0},
	{[]int{2, 3, 8, 6}, []int{4, 3, 3, 3}, 2, 1},
	{[]int{1, 2, 9, 8}, []int{3, 2, 7, 7}, 2, 3},
}

func TestConv2dGradient(t *testing.T) {
	for _, dt := range floatTypes {
		for i, c := range convCases {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				inputs := []*tensor.Dense{asDtype(randDense(rng, c.x...), dt), asDtype(randDense(rng, c.w...), dt)}
				checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) {
					x, err := nonLeaf(in[0])
					if err != nil {
						return nil, err
					}
					return Conv2d(x, in[1], c.stride, c.pad)
				}), inputs, gradTolerance(dt))
			})
		}
	}
}

// stockConv builds gorgonia's own Conv2d of in[0] with kernel in[1], the
// reference for Conv2d.
func stockConv(stride, pad int) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		x, err := nonLeaf(in[0])
		if err != nil {
			return nil, err
		}
		k := in[1].Shape()[2]
		return G.Conv2d(x, in[1], tensor.Shape{k, k}, []int{pad, pad}, []int{stride, stride}, []int{1, 1})
	}
}

// ownConv builds this package's Conv2d of in[0] with kernel in[1].
func ownConv(stride, pad int) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		x, err := nonLeaf(in[0])
		if err != nil {
			return nil, err
		}
		return Conv2d(x, in[1], stride, pad)
	}
}

func TestConv2dMatchesStock(t *testing.T) {
	for _, dt := range floatTypes {
		for i, c := range convCases {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 2))
				inputs := []*tensor.Dense{randDense(rng, c.x...), randDense(rng, c.w...)}
				compareWithStock(t, inputs, dt, 1e-5, ownConv(c.stride, c.pad), stockConv(c.stride, c.pad))
			})
		}
		// Several chunks per goroutine and one partial filter gradient per goroutine, summed transposed.
		t.Run(fmt.Sprintf("%v/chunks", dt), func(t *testing.T) {
			defer SetThreads(Threads())
			SetThreads(2)
			rng := rand.New(rand.NewPCG(10, 2))
			inputs := []*tensor.Dense{randDense(rng, 20, 8, 12, 12), randDense(rng, 16, 8, 3, 3)}
			if ch := (convGeom{n: 20, c: 8, h: 12, w: 12, o: 16, k: 3, stride: 1, pad: 1, oh: 12, ow: 12}).chunking(); ch.workers != 2 || ch.chunks < 4 {
				t.Fatalf("chunking %+v: want 2 goroutines with 2 or more chunks each", ch)
			}
			compareWithStock(t, inputs, dt, 1e-5, ownConv(1, 1), stockConv(1, 1))
		})
		// The first layer of the default backbone on real images.
		t.Run(fmt.Sprintf("%v/fashion", dt), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 2))
			inputs := []*tensor.Dense{fashionBatch(t, 16), randDense(rng, 8, 1, 3, 3)}
			compareWithStock(t, inputs, dt, 1e-5, ownConv(1, 1), stockConv(1, 1))
		})
	}
}

// TestConv2dRepeatedRuns checks that reused buffers give the same result on every run and that the input
// gradient does not depend on what a previous run left in them.
func TestConv2dRepeatedRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	g := G.NewGraph()
	nodes, values := gradGraphInputs(g, []*tensor.Dense{randDense(rng, 2, 3, 6, 6), randDense(rng, 4, 3, 3, 3)}, tensor.Float32)
	x, err := nonLeaf(nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	y, err := Conv2d(x, nodes[1], 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := weightedSum(y)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(c, nodes...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(nodes...))
	defer vm.Close()
	var first []float64
	for run := 0; run < 3; run++ {
		if run == 2 { // new input values must show in the gradient
			for i := range values[1].Float32s() {
				values[1].Float32s()[i] *= 2
			}
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		gx, _ := nodes[0].Grad()
		got := toFloat64s(gx.(*tensor.Dense))
		vm.Reset()
		for _, n := range nodes { // as a solver's Step does: gradients accumulate until zeroed
			gr, _ := n.Grad()
			gr.(*tensor.Dense).Zero()
		}
		switch run {
		case 0:
			first = got
		case 1:
			assertClose(t, "second run", got, first, 0)
		case 2:
			for i := range first {
				first[i] *= 2
			}
			assertClose(t, "run with doubled filters", got, first, 1e-6)
		}
	}
}

// TestConv2dLeafInput checks that no input gradient is built for a leaf input: G.Grad refuses it explicitly,
// and the filter gradient still matches the one computed with an input gradient.
func TestConv2dLeafInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	inputs := []*tensor.Dense{randDense(rng, 2, 1, 6, 6), randDense(rng, 3, 1, 3, 3)}
	build := func(g *G.ExprGraph, wrap bool) ([]*G.Node, *G.Node) {
		nodes, _ := gradGraphInputs(g, inputs, tensor.Float32)
		x := nodes[0]
		if wrap {
			var err error
			if x, err = nonLeaf(x); err != nil {
				t.Fatal(err)
			}
		}
		y, err := Conv2d(x, nodes[1], 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := weightedSum(y)
		if err != nil {
			t.Fatal(err)
		}
		return nodes, c
	}
	nodes, c := build(G.NewGraph(), false)
	if _, err := G.Grad(c, nodes...); err == nil {
		t.Error("G.Grad with respect to a leaf conv input: no error")
	}
	var dw [2][]float64
	for i, wrap := range []bool{false, true} {
		g := G.NewGraph()
		nodes, c := build(g, wrap)
		if _, err := G.Grad(c, nodes[1]); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g, G.BindDualValues(nodes[1]))
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		gw, _ := nodes[1].Grad()
		dw[i] = toFloat64s(gw.(*tensor.Dense))
		vm.Close()
	}
	assertClose(t, "filter gradient", dw[0], dw[1], 0)
}

func TestConv2dShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 8, 8), G.WithName("x"))
	x64 := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 8, 8), G.WithName("x64"))
	xi := G.NewTensor(g, tensor.Int, 4, G.WithShape(2, 3, 8, 8), G.WithName("xi"))
	wi := G.NewTensor(g, tensor.Int, 4, G.WithShape(4, 3, 3, 3), G.WithName("wi"))
	x3 := G.NewTensor(g, tensor.Float32, 3, G.WithShape(3, 8, 8), G.WithName("x3"))
	w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(4, 3, 3, 3), G.WithName("w"))
	wRect := G.NewTensor(g, tensor.Float32, 4, G.WithShape(4, 3, 3, 2), G.WithName("wrect"))
	wChan := G.NewTensor(g, tensor.Float32, 4, G.WithShape(4, 2, 3, 3), G.WithName("wchan"))
	wBig := G.NewTensor(g, tensor.Float32, 4, G.WithShape(4, 3, 11, 11), G.WithName("wbig"))
	cases := []struct {
		x, w        *G.Node
		stride, pad int
	}{
		{x3, w, 1, 1},
		{x, wRect, 1, 1},
		{x, wChan, 1, 1},
		{x64, w, 1, 1},
		{xi, wi, 1, 1},
		{x, w, 0, 1},
		{x, w, 1, -1},
		{x, wBig, 1, 1},
	}
	for i, c := range cases {
		if _, err := Conv2d(c.x, c.w, c.stride, c.pad); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
	if _, err := Conv2d(x, wBig, 1, 2); err != nil {
		t.Errorf("kernel 11 on 8x8 with pad 2 fits exactly: %v", err)
	}
}

// TestConv2dChunks compares Conv2d with gorgonia's on batches split into chunks of several images (with a
// smaller last chunk), of one image, and pointwise, on one to three goroutines.
func TestConv2dChunks(t *testing.T) {
	defer SetThreads(0)
	cases := []struct {
		x, w        []int
		stride, pad int
	}{
		{[]int{7, 3, 4, 4}, []int{5, 3, 3, 3}, 1, 1},
		{[]int{7, 4, 4, 4}, []int{3, 4, 1, 1}, 1, 0},
		{[]int{5, 2, 6, 6}, []int{4, 2, 3, 3}, 2, 1},
		{[]int{3, 2, 33, 33}, []int{2, 2, 3, 3}, 1, 1},
		{[]int{3, 2, 33, 33}, []int{3, 2, 1, 1}, 1, 0},
	}
	for _, threads := range []int{1, 2, 3} {
		SetThreads(threads)
		for i, c := range cases {
			for _, dt := range floatTypes {
				t.Run(fmt.Sprintf("threads%d/case%d/%v", threads, i, dt), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(i), 5))
					inputs := []*tensor.Dense{randDense(rng, c.x...), randDense(rng, c.w...)}
					compareWithStock(t, inputs, dt, 1e-5, ownConv(c.stride, c.pad), stockConv(c.stride, c.pad))
				})
			}
		}
	}
}

// TestConvChunking checks the split of batches into chunks: about convChunkColumns positions per chunk, a
// number of chunks that is a multiple of the goroutines where the batch allows, every image in one chunk.
func TestConvChunking(t *testing.T) {
	defer SetThreads(0)
	for i, c := range []struct {
		n, side, threads             int
		images, chunks, workers, gem int
	}{
		{128, 28, 2, 1, 128, 2, 1}, // 784 positions: one image per chunk
		{128, 7, 2, 16, 8, 2, 1},   // 49 positions: 20 images would do, 16 split evenly
		{64, 32, 2, 1, 64, 2, 1},   // ResNet-18 stage 1
		{64, 4, 2, 32, 2, 2, 1},    // ResNet-18 stage 4: 16 positions
		{1, 32, 2, 1, 1, 1, 2},     // one image: its products use both goroutines
		{7, 4, 3, 3, 3, 3, 1},
		{5, 8, 1, 5, 1, 1, 1},
	} {
		SetThreads(c.threads)
		g := convGeom{n: c.n, c: 1, h: c.side, w: c.side, o: 1, k: 1, stride: 1, oh: c.side, ow: c.side}
		got := g.chunking()
		want := convChunks{images: c.images, chunks: c.chunks, workers: c.workers, gemmThreads: c.gem}
		if got != want {
			t.Errorf("case %d: %+v, want %+v", i, got, want)
		}
		covered := 0
		for j := range got.chunks {
			first, count := got.span(g, j)
			if first != covered || count < 1 {
				t.Errorf("case %d: chunk %d spans %d+%d after %d images", i, j, first, count, covered)
			}
			covered += count
		}
		if covered != c.n {
			t.Errorf("case %d: chunks cover %d images, want %d", i, covered, c.n)
		}
	}
}

// TestConv2dConstInput checks that the variant for inputs behind frozen layers gives Conv2d's output and filter
// gradient exactly and builds no input gradient.
func TestConv2dConstInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	values := []*tensor.Dense{randDense(rng, 2, 3, 6, 6), randDense(rng, 4, 3, 3, 3)}
	var outs, grads [][]float64
	for _, conv := range []func(x, w *G.Node, stride, pad int) (*G.Node, error){Conv2d, Conv2dConstInput} {
		g := G.NewGraph()
		nodes, _ := gradGraphInputs(g, values, tensor.Float32)
		x, err := nonLeaf(nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		y, err := conv(x, nodes[1], 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := weightedSum(y)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := G.Grad(c, nodes[1]); err != nil {
			t.Fatal(err)
		}
		inputGrads := 0
		for _, n := range g.AllNodes() {
			if n.Op() != nil && strings.HasPrefix(n.Op().String(), "Conv2dInputGrad") {
				inputGrads++
			}
		}
		if want := len(outs) == 0; (inputGrads == 1) != want {
			t.Errorf("%d input-gradient nodes, want one only for Conv2d", inputGrads)
		}
		vm := G.NewTapeMachine(g, G.BindDualValues(nodes[1]))
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		gw, _ := nodes[1].Grad()
		outs = append(outs, toFloat64s(y.Value().(*tensor.Dense)))
		grads = append(grads, toFloat64s(gw.(*tensor.Dense)))
		vm.Close()
	}
	assertClose(t, "output", outs[1], outs[0], 0)
	assertClose(t, "filter gradient", grads[1], grads[0], 0)
}
