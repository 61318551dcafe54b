package vector

import (
	"math/rand/v2"
	"testing"
)

// TestWinogradPasses compares the Winograd transform passes with their formulas, element by element: each
// output is one addition or subtraction, so float32 results must be equal.
func TestWinogradPasses(t *testing.T) { forEachLevel(t, testWinogradPasses) }

func testWinogradPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range lengths {
		r := [4][]float32{data(rng, n, 0), data(rng, n, 0), data(rng, n, 0), data(rng, n, 0)}
		var o [4][]float32
		for k := range o {
			o[k] = make([]float32, n)
		}
		WinogradRows(o[0], o[1], o[2], o[3], r[0], r[1], r[2], r[3])
		for j := range n {
			want := [4]float32{r[0][j] - r[2][j], r[1][j] + r[2][j], r[2][j] - r[1][j], r[1][j] - r[3][j]}
			for k := range o {
				if o[k][j] != want[k] {
					t.Fatalf("rows, n %d: output %d[%d] = %g, want %g", n, k, j, o[k][j], want[k])
				}
			}
		}
		row := data(rng, 2*n+2, 0)
		WinogradColumns(o[0], o[1], o[2], o[3], row)
		for j := range n {
			q := row[2*j : 2*j+4]
			want := [4]float32{q[0] - q[2], q[1] + q[2], q[2] - q[1], q[1] - q[3]}
			for k := range o {
				if o[k][j] != want[k] {
					t.Fatalf("columns, n %d: output %d[%d] = %g, want %g", n, k, j, o[k][j], want[k])
				}
			}
		}
	}
}

// TestWinogradOutputKernels compares WinogradOutput and WinogradOutputGrad with their formulas in the same
// order of operations, tile by tile: float32 results must be equal.
func TestWinogradOutputKernels(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range lengths {
		stride := n + 3 // points not adjacent, as with the convolutions' skew
		m := data(rng, 16*stride, 0)
		even, odd := make([]float32, 2*n), make([]float32, 2*n)
		WinogradOutput(even, odd, m, stride)
		for k := range n {
			p := func(r, j int) float32 { return m[(4*r+j)*stride+k] }
			var s, u [4]float32
			for j := range 4 {
				s[j], u[j] = p(0, j)+p(1, j)+p(2, j), p(1, j)-p(2, j)-p(3, j)
			}
			want := [4]float32{s[0] + s[1] + s[2], s[1] - s[2] - s[3], u[0] + u[1] + u[2], u[1] - u[2] - u[3]}
			if got := [4]float32{even[2*k], even[2*k+1], odd[2*k], odd[2*k+1]}; got != want {
				t.Fatalf("output, n %d, tile %d: %v, want %v", n, k, got, want)
			}
		}
		WinogradOutputGrad(m, stride, even, odd)
		for k := range n {
			a, b, c, d := even[2*k], even[2*k+1], odd[2*k], odd[2*k+1]
			rows := [4][2]float32{{a, b}, {a + c, b + d}, {a - c, b - d}, {-c, -d}}
			for r, row := range rows {
				want := [4]float32{row[0], row[0] + row[1], row[0] - row[1], -row[1]}
				for j := range 4 {
					if got := m[(4*r+j)*stride+k]; got != want[j] {
						t.Fatalf("output gradient, n %d, tile %d: point %d = %g, want %g", n, k, 4*r+j, got, want[j])
					}
				}
			}
		}
	}
}

// TestWinogradFilters compares WinogradFilters with G f Gᵀ computed in the same order of operations, for
// points placed in order and permuted: float32 results must be equal.
func TestWinogradFilters(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 8, 16, 72} {
		w := data(rng, 9*n, 0)
		stride := n + 5
		var offsets [16]int
		for xi := range offsets {
			offsets[xi] = (15 - xi) * stride // reversed, to check the offsets are followed
		}
		u := data(rng, 16*stride, 0)
		WinogradFilters(u, &offsets, w)
		half := func(a, b, c float32) (float32, float32) { return (a + b + c) * 0.5, (a - b + c) * 0.5 }
		for k := range n {
			f := w[9*k : 9*k+9]
			var gf [4][3]float32
			for j := range 3 {
				gf[0][j], gf[3][j] = f[j], f[6+j]
				gf[1][j], gf[2][j] = half(f[j], f[3+j], f[6+j])
			}
			for r, row := range gf {
				p1, p2 := half(row[0], row[1], row[2])
				for j, want := range [4]float32{row[0], p1, p2, row[2]} {
					if got := u[offsets[4*r+j]+k]; got != want {
						t.Fatalf("n %d, filter %d: point %d = %g, want %g", n, k, 4*r+j, got, want)
					}
				}
			}
		}
	}
}

// TestWinogradFilterAdjoint compares WinogradFilterAdjoint with Gᵀ f G computed in the same order of
// operations: float32 results must be equal.
func TestWinogradFilterAdjoint(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 8, 16, 72} {
		stride := n + 3
		f := data(rng, 16*stride, 0)
		d := make([]float32, 9*n)
		WinogradFilterAdjoint(d, f, stride)
		adjoint := func(a, b, c, e float32) [3]float32 { return [3]float32{a + (b+c)/2, (b - c) / 2, (b+c)/2 + e} }
		for k := range n {
			var gf [3][4]float32
			for j := range 4 {
				col := adjoint(f[j*stride+k], f[(4+j)*stride+k], f[(8+j)*stride+k], f[(12+j)*stride+k])
				gf[0][j], gf[1][j], gf[2][j] = col[0], col[1], col[2]
			}
			for r, row := range gf {
				for q, want := range adjoint(row[0], row[1], row[2], row[3]) {
					if got := d[(3*r+q)*n+k]; got != want {
						t.Fatalf("n %d, set %d: element %d = %g, want %g", n, k, 3*r+q, got, want)
					}
				}
			}
		}
	}
}

// TestWinogradInputPlane compares WinogradInputPlane with Bᵀ d B computed tile by tile in the order of
// operations of its passes, on planes narrower and wider than 8 tiles: float32 results must be equal.
func TestWinogradInputPlane(t *testing.T) { forEachLevel(t, testWinogradInputPlane) }

func testWinogradInputPlane(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range []struct{ down, across int }{{1, 1}, {2, 2}, {4, 4}, {7, 7}, {3, 9}, {16, 16}, {5, 24}, {2, 33}} {
		width := 2*s.across + 2
		padded := data(rng, (2*s.down+2)*width+8, 0)
		n := s.down * s.across
		stride := n + 8 // room for the last row's rounding
		v := make([]float32, 16*stride)
		WinogradInputPlane(v, stride, padded, make([]float32, WinogradInputScratch(s.across)), s.down, s.across)
		for ty := range s.down {
			for tx := range s.across {
				var d [4][4]float32 // Bᵀ d, rows a = r0-r2, b = r1+r2, c = r2-r1, e = r1-r3
				at := func(r, c int) float32 { return padded[(2*ty+r)*width+2*tx+c] }
				for c := range 4 {
					d[0][c], d[1][c], d[2][c], d[3][c] = at(0, c)-at(2, c), at(1, c)+at(2, c), at(2, c)-at(1, c), at(1, c)-at(3, c)
				}
				for k, q := range d {
					want := [4]float32{q[0] - q[2], q[1] + q[2], q[2] - q[1], q[1] - q[3]}
					for j := range 4 {
						if got := v[(4*k+j)*stride+ty*s.across+tx]; got != want[j] {
							t.Fatalf("%dx%d tiles, tile (%d,%d): point %d = %g, want %g", s.down, s.across, ty, tx, 4*k+j, got, want[j])
						}
					}
				}
			}
		}
	}
}
