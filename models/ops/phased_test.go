package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkStridedPatches measures im2col and col2im of ResNet-18's three stride-2 3x3 convolutions at 32x32
// (batch 64) and of its 7x7 stride-2 stem at 224x224 (batch 16), chunk by chunk as the convolutions run
// them, on one goroutine: the polyphase path against the row-by-row one it replaced, which gathers every
// element of every patch-matrix row.
func BenchmarkStridedPatches(b *testing.B) {
	for _, s := range []struct{ n, c, side, o, k, pad int }{
		{64, 64, 32, 128, 3, 1}, {64, 128, 16, 256, 3, 1}, {64, 256, 8, 512, 3, 1}, {16, 3, 224, 64, 7, 3},
	} {
		g := phasedGeom(s.n, s.c, s.side, s.side, s.o, s.k, 2, s.pad)
		taps, ch := g.taps(), g.chunking()
		cols := ch.images * g.outPlane()
		x, col := benchData(g.n*g.c*g.inPlane()), make([]float32, g.patch()*cols)
		dx := make([]float32, len(x))
		rows := func(i int) {
			first, count := ch.span(g, i)
			for j := range count {
				for c := range g.c {
					plane := x[((first+j)*g.c+c)*g.inPlane():][:g.inPlane()]
					for t, tap := range taps {
						im2colRows(g, plane, col[(c*g.k*g.k+t)*count*g.outPlane()+j*g.outPlane():][:g.outPlane()], tap)
					}
				}
			}
		}
		rowsAdjoint := func(i int) {
			first, count := ch.span(g, i)
			for j := range count {
				for c := range g.c {
					plane := dx[((first+j)*g.c+c)*g.inPlane():][:g.inPlane()]
					clear(plane)
					for t, tap := range taps {
						col2imRows(g, col[(c*g.k*g.k+t)*count*g.outPlane()+j*g.outPlane():][:g.outPlane()], plane, tap)
					}
				}
			}
		}
		for _, p := range []struct {
			name string
			run  func(i int)
		}{
			{"im2col/phased", func(i int) { first, count := ch.span(g, i); im2col(g, taps, x, col, first, count) }},
			{"im2col/rows", rows},
			{"col2im/phased", func(i int) { first, count := ch.span(g, i); col2im(g, taps, col, dx, first, count) }},
			{"col2im/rows", rowsAdjoint},
		} {
			b.Run(fmt.Sprintf("n%d-c%d-%dx%d-k%d/%s", s.n, s.c, s.side, s.side, s.k, p.name), func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					for i := range ch.chunks {
						p.run(i)
					}
				}
				b.ReportMetric((processCPU()-cpu).Seconds()*1e3/float64(b.N), "CPU-ms/op")
			})
		}
	}
}

// phasedCases are strided convolutions [n, c, h, w] -> o with kernel k, stride and pad that take the
// polyphase path (convGeom.phased): ResNet-18's stride-2 3x3 convolutions at 32x32 (smaller batches), its 7x7
// stride-2 stem on an odd and an even side, odd and rectangular planes, a plane of one pixel and stride 3
// with a 5x5 kernel.
var phasedCases = []struct{ n, c, h, w, o, k, stride, pad int }{
	{2, 8, 32, 32, 16, 3, 2, 1},
	{2, 16, 16, 16, 32, 3, 2, 1},
	{3, 16, 8, 8, 32, 3, 2, 1},
	{1, 3, 23, 22, 4, 7, 2, 3},
	{2, 3, 16, 16, 4, 7, 2, 3},
	{2, 3, 7, 6, 5, 3, 2, 1},
	{2, 3, 6, 7, 5, 3, 2, 1},
	{1, 2, 1, 1, 3, 3, 2, 1},
	{2, 3, 9, 10, 2, 5, 3, 2},
	{2, 3, 7, 5, 2, 5, 3, 2},
}

func phasedGeom(n, c, h, w, o, k, stride, pad int) convGeom {
	g := convGeom{n: n, c: c, h: h, w: w, o: o, k: k, stride: stride, pad: pad}
	g.oh, g.ow = (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	return g
}

// TestPhasedPatches checks im2col and col2im of phased convolutions against their definitions written out
// element by element, bit for bit: the polyphase path copies the same values, and adds each input
// position's gradient terms in the same order (kernel offsets in order, starting from zero), as the
// row-by-row path it replaces. The patch matrices are filled with NaN first, so that a position the path
// forgets fails.
func TestPhasedPatches(t *testing.T) {
	for i, c := range phasedCases {
		g := phasedGeom(c.n, c.c, c.h, c.w, c.o, c.k, c.stride, c.pad)
		if !g.phased() {
			t.Fatalf("case %d: %v is not phased", i, g)
		}
		t.Run(fmt.Sprintf("%v/float32", g), func(t *testing.T) { checkPhasedPatches[float32](t, g, uint64(i)) })
		t.Run(fmt.Sprintf("%v/float64", g), func(t *testing.T) { checkPhasedPatches[float64](t, g, uint64(i)) })
	}
	for _, g := range []convGeom{
		phasedGeom(2, 2, 7, 6, 3, 3, 2, 0), // 3x3 outputs of a 7x6 input: not the polyphase planes' size
		phasedGeom(2, 2, 8, 8, 3, 3, 1, 1),
		phasedGeom(2, 2, 5, 4, 3, 2, 2, 1),
		phasedGeom(2, 16, 8, 8, 32, 1, 2, 0), // a 1x1 kernel reads one of the four planes
	} {
		if g.phased() {
			t.Errorf("%v: phased, want the row-by-row path", g)
		}
	}
}

func checkPhasedPatches[T float](t *testing.T, g convGeom, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 47))
	taps := g.taps()
	p, cols := g.outPlane(), g.n*g.outPlane()
	x := randSlice[T](rng, g.n*g.c*g.inPlane())
	col := nanSlice[T](g.patch() * cols)
	im2col(g, taps, x, col, 0, g.n)
	dcol := randSlice[T](rng, g.patch()*cols)
	want := make([]T, len(x))
	for row := range g.patch() {
		c, kh, kw := row/(g.k*g.k), row/g.k%g.k, row%g.k
		for i := range g.n {
			for oy := range g.oh {
				for ox := range g.ow {
					at := row*cols + i*p + oy*g.ow + ox
					iy, ix := oy*g.stride-g.pad+kh, ox*g.stride-g.pad+kw
					var v T
					if iy >= 0 && iy < g.h && ix >= 0 && ix < g.w {
						xi := ((i*g.c+c)*g.h+iy)*g.w + ix
						v = x[xi]
						want[xi] += dcol[at]
					}
					if col[at] != v {
						t.Fatalf("im2col: row %d image %d (%d, %d): %v, want %v", row, i, oy, ox, col[at], v)
					}
				}
			}
		}
	}
	dx := nanSlice[T](len(x))
	col2im(g, taps, dcol, dx, 0, g.n)
	for i := range want {
		if dx[i] != want[i] {
			t.Fatalf("col2im: element %d: %v, want %v", i, dx[i], want[i])
		}
	}
}
