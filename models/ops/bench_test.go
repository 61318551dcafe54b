package ops

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// BenchmarkConvNetStep measures one training step (forward, backward, SGD) of the default backbone on a
// batch of 128 Fashion-MNIST images, built from this package's ops and from stock gorgonia ops. The stock
// variant runs OpenBLAS on all cores, the setting docs/toolchain.md ("gorgonia and BLAS") describes.
//
// Measured on the 2-core development machine at a load average near 2 (-benchtime=20x): ops 1701 img/s,
// stock 285 img/s (before the chunked convolutions and AVX2 kernels, at a load average near 6: ops 715,
// stock 192).
func BenchmarkConvNetStep(b *testing.B) {
	const batch = 128
	images, labels, err := readFashion(batch)
	if err != nil {
		b.Fatal(err)
	}
	for _, variant := range []struct {
		name  string
		stock bool
	}{{"ops", false}, {"stock", true}} {
		b.Run(variant.name, func(b *testing.B) {
			if variant.stock {
				setOpenBLASThreads(runtime.GOMAXPROCS(0))
				defer setOpenBLASThreads(1)
			}
			net, err := buildConvNet(batch, variant.stock)
			if err != nil {
				b.Fatal(err)
			}
			tr, err := newTrainer(net, images, labels)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.vm.Close()
			if _, err := tr.step(); err != nil { // warm-up: buffers are allocated in the first run
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "img/s")
		})
	}
}

// benchData returns n pseudo-random float32 values in [-1, 1).
func benchData(n int) []float32 {
	rng := rand.New(rand.NewPCG(1, 1))
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(2*rng.Float64() - 1)
	}
	return d
}

// BenchmarkBatchNorm measures the forward and backward kernels of the first batch norm of the default
// backbone (training, ReLU fused) on [128,32,28,28].
func BenchmarkBatchNorm(b *testing.B) {
	const n, c, s = 128, 32, 28 * 28
	x, dy, y, dx := benchData(n*c*s), benchData(n*c*s), make([]float32, n*c*s), make([]float32, n*c*s)
	gamma, beta := benchData(c), benchData(c)
	fwd := &bnOp{bn: NewBatchNorm(c), training: true, relu: true, dims: 4, n: n, c: c, s: s,
		mean: make([]float64, c), invStd: make([]float64, c)}
	bwd := &bnGradOp{fwd: fwd, dgamma: make([]float64, c), dbeta: make([]float64, c)}
	for b.Loop() {
		bnForward(fwd, x, gamma, beta, y)
		bnBackward(bwd, x, gamma, y, dy, dx)
	}
}

// BenchmarkConv2d measures the forward and backward kernels of the second convolution of the default
// backbone, 32->64 channels on [128,32,14,14], and of a first-stage convolution of ResNet-18, 64->64
// channels on [64,64,32,32].
func BenchmarkConv2d(b *testing.B) {
	for _, c := range []struct {
		name string
		g    convGeom
	}{
		{"convnet-conv2", convGeom{n: 128, c: 32, h: 14, w: 14, o: 64, k: 3, stride: 1, pad: 1, oh: 14, ow: 14}},
		{"resnet18-layer1", convGeom{n: 64, c: 64, h: 32, w: 32, o: 64, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := c.g
			x, w, dy := benchData(g.n*g.c*g.inPlane()), benchData(g.o*g.patch()), benchData(g.n*g.o*g.outPlane())
			y, dw, dx := make([]float32, len(dy)), make([]float32, len(w)), make([]float32, len(x))
			for b.Loop() {
				convForward(g, x, w, y)
				convFilterGrad(g, x, dy, dw)
				convInputGrad(g, w, dy, dx)
			}
		})
	}
}

// BenchmarkMaxPool2 measures the forward and backward kernels of the first max pooling of the default
// backbone on [128,32,28,28].
func BenchmarkMaxPool2(b *testing.B) {
	const planes, h, w = 128 * 32, 28, 28
	x, dy := benchData(planes*h*w), benchData(planes*h*w/4)
	y, dx, argmax := make([]float32, len(dy)), make([]float32, len(x)), make([]uint8, len(dy))
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			maxPool2(x, y, argmax, h, w)
		}
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			maxPool2Grad(dy, dx, argmax, h, w)
		}
	})
}

// BenchmarkMaxPool3x3 measures the forward and backward kernels of the ImageNet stem's max pooling (3x3,
// stride 2, pad 1) on [16,64,112,112], batch 16 of 224x224 images, on ReLU outputs (half of them zero) as
// after the stem.
func BenchmarkMaxPool3x3(b *testing.B) {
	g := poolGeom{shape: tensor.Shape{16, 64, 112, 112}, k: 3, stride: 2, pad: 1, oh: 56, ow: 56}
	x, dy := benchData(g.planes()*g.inPlane()), benchData(g.planes()*g.outPlane())
	for i, v := range x {
		x[i] = max(v, 0)
	}
	y, dx, argmax := make([]float32, len(dy)), make([]float32, len(x)), make([]int32, len(dy))
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			maxPoolK(g, x, y, argmax)
		}
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			maxPoolKGrad(g, dy, dx, argmax)
		}
	})
}

// BenchmarkConv2d3x3 compares the im2col and Winograd paths of the forward convolution and of both
// gradients on the 3x3 same-padding convolutions of ResNet-18's four stages at batch 64 (3x32x32 images) and
// at batch 16 (3x224x224 images, ImageNet stem), on the second and third convolutions of the default
// backbone (batch 128), and on thinner ones that place winogradMinChannels. Besides
// wall time it reports CPU time per operation, steadier on a shared machine.
func BenchmarkConv2d3x3(b *testing.B) {
	for _, s := range []struct{ n, c, o, side int }{
		{64, 8, 8, 32}, {64, 16, 16, 32}, {64, 32, 32, 32}, {64, 64, 64, 32}, {64, 128, 128, 16}, {64, 256, 256, 8},
		{64, 512, 512, 4}, {16, 64, 64, 56}, {16, 128, 128, 28}, {16, 256, 256, 14}, {16, 512, 512, 7},
		{128, 1, 32, 28}, {128, 32, 64, 14}, {128, 64, 128, 7}, {64, 3, 64, 32}, {64, 4, 4, 32},
	} {
		g := convGeom{n: s.n, c: s.c, h: s.side, w: s.side, o: s.o, k: 3, stride: 1, pad: 1, oh: s.side, ow: s.side}
		x, w, dy := benchData(g.n*g.c*g.inPlane()), benchData(g.o*g.patch()), benchData(g.n*g.o*g.outPlane())
		out, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
		for _, p := range []struct {
			name string
			run  func()
		}{
			{"forward/im2col", func() { im2colForward(g, x, w, out) }},
			{"forward/winograd23", func() { winograd23Forward(g, x, w, out) }},
			{"forward/winograd43", func() { winograd43Forward(g, x, w, out) }},
			{"inputgrad/im2col", func() { im2colInputGrad(g, w, dy, dx) }},
			{"inputgrad/winograd23", func() { winograd23InputGrad(g, w, dy, dx) }},
			{"inputgrad/winograd43", func() { winograd43InputGrad(g, w, dy, dx) }},
			{"filtergrad/im2col", func() { im2colFilterGrad(g, x, dy, dw) }},
			{"filtergrad/winograd23", func() { winograd23FilterGrad(g, x, dy, dw) }},
			{"filtergrad/winograd43", func() { winograd43FilterGrad(g, x, dy, dw) }},
		} {
			b.Run(fmt.Sprintf("n%d-c%d-o%d-%dx%d/%s", s.n, s.c, s.o, s.side, s.side, p.name), func(b *testing.B) {
				p.run() // scratch buffers are allocated in the first run
				cpu := processCPU()
				for b.Loop() {
					p.run()
				}
				b.ReportMetric((processCPU()-cpu).Seconds()*1e3/float64(b.N), "CPU-ms/op")
			})
		}
	}
}

// processCPU returns the user and system CPU time of the process so far: on the shared machine, CPU time
// per operation varies much less with the other processes' load than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
