package main

import (
	"time"

	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"

	"github.com/bicyc/bicyc/bench/compare"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/train"
)

// stepFLOPs returns the floating-point operations of one training step of b, 2 per multiply-add, counted from
// the layer shapes: every convolution's forward pass; for a trainable one its weight gradient, and its input
// gradient where back-propagation must go through it to reach an earlier trainable layer (each costs as much
// as the forward pass); the head's forward, weight and input gradients; for the BiCyc step also the old
// backbone's forward and the mappers (below). BN, ReLU, pooling, the losses and the update are not counted:
// they are a few percent of the work and not matrix products.
func stepFLOPs(b *benchmark, n train.Stage1Nets) float64 {
	flops := 3 * linearFLOPs(b.batch, featureDim, b.classes)
	for _, l := range n.Backbone.ConvLayers(b.side, b.side) {
		pass := 2 * float64(b.batch) * float64(l.MACs())
		flops += pass
		if !l.Frozen {
			flops += pass
		}
		if l.NeedsInputGrad {
			flops += pass
		}
	}
	if !b.bicyc {
		return flops
	}
	for _, l := range n.Old.ConvLayers(b.side, b.side) {
		flops += 2 * float64(b.batch) * float64(l.MACs())
	}
	// D(z), A(z_old), A(sg D(z)), D(sg A(z_old)): four mapper applications S -> hS -> S, each with both
	// layers' forward and weight gradients and the second layer's input gradient; D(z) also back-propagates
	// through its first layer to z.
	hidden := models.DefaultHiddenMult * featureDim
	layer := linearFLOPs(b.batch, featureDim, hidden)
	return flops + 4*5*layer + layer
}

// linearFLOPs returns the operations of one pass of a batch through a dense layer in -> out.
func linearFLOPs(batch, in, out int) float64 { return 2 * float64(batch) * float64(in) * float64(out) }

// sgemmGFLOPs times calls products of two square float32 matrices of the given size through the BLAS gorgonia
// uses (after ops.UseOpenBLAS: OpenBLAS on one thread per goroutine, the product split over ops.Threads()
// goroutines, as bicyc's convolutions run it), after one warm-up call. It returns each call's GFLOP/s of wall
// time and the GFLOP per CPU-second of the process over all calls, which depends less on other jobs' load.
func sgemmGFLOPs(size, calls int) ([]float64, float64, error) {
	a, b, c := make([]float32, size*size), make([]float32, size*size), make([]float32, size*size)
	for i := range a {
		a[i], b[i] = float32(i%7)-3, float32(i%5)-2
	}
	impl := G.WhichBLAS()
	gemm := func() { impl.Sgemm(blas.NoTrans, blas.NoTrans, size, size, size, 1, a, size, b, size, 0, c, size) }
	gemm()
	flops := 2 * float64(size) * float64(size) * float64(size)
	cpuStart, err := compare.CPUTime()
	if err != nil {
		return nil, 0, err
	}
	var wall []float64
	for range calls {
		start := time.Now()
		gemm()
		wall = append(wall, flops/time.Since(start).Seconds()/1e9)
	}
	cpuEnd, err := compare.CPUTime()
	if err != nil {
		return nil, 0, err
	}
	return wall, float64(calls) * flops / (cpuEnd - cpuStart).Seconds() / 1e9, nil
}
