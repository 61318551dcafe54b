//go:build amd64 && !purego

package vector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The matrices of F(4x4, 3x3), for float64 references of the kernels.
var (
	bt43 = [6][6]float64{{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
		{0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}}
	at43 = [4][6]float64{{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}
	g43  = [6][3]float64{{1. / 4, 0, 0}, {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6},
		{1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}}
)

// tolerance43 bounds a kernel's difference from the float64 reference for inputs in [-1, 1): a few units of
// float32 rounding of results up to 20 in magnitude (the sums of the coefficients' magnitudes).
const tolerance43 = 2e-5

// check43 fails t if got differs from the row of coefficients applied to in by more than tolerance43.
func check43(t *testing.T, what string, got float32, coefficients []float64, in ...float32) {
	t.Helper()
	var want float64
	for i, c := range coefficients {
		want += c * float64(in[i])
	}
	if math.Abs(float64(got)-want) > tolerance43 {
		t.Fatalf("%s = %g, want %g", what, got, want)
	}
}

// TestWinograd43Kernels compares the F(4x4, 3x3) kernels with the transforms' matrices in float64.
func TestWinograd43Kernels(t *testing.T) { forEachLevel(t, testWinograd43Kernels) }

func testWinograd43Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range lengths {
		var r, o [6][]float32
		for k := range r {
			r[k], o[k] = data(rng, n, 0), make([]float32, n)
		}
		Combine43(Input43, o[:], r[:])
		for j := range n {
			for k := range o {
				check43(t, "input", o[k][j], bt43[k][:], r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j])
			}
		}
		row := data(rng, 4*n+8, 0)
		WinogradColumns43(o[:], row)
		for j := range n {
			for l := range o {
				check43(t, "columns", o[l][j], bt43[l][:], row[4*j:4*j+6]...)
			}
		}
		var out [4][]float32
		for k := range out {
			out[k] = make([]float32, n)
		}
		Combine43(Output43, out[:], r[:])
		interleaved := make([]float32, 4*n)
		WinogradOutputInterleave43(interleaved, r[:])
		for j := range n {
			for k := range out {
				check43(t, "output", out[k][j], at43[k][:], r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j])
				if interleaved[4*j+k] != out[k][j] {
					t.Fatalf("interleaved output %d of %d = %g, want %g", k, j, interleaved[4*j+k], out[k][j])
				}
			}
		}
		t4 := [4][]float32{r[0], r[1], r[2], r[3]}
		Combine43(OutputGrad43, o[:], t4[:])
		for j := range n {
			for k := range o {
				check43(t, "output gradient", o[k][j], []float64{at43[0][k], at43[1][k], at43[2][k], at43[3][k]},
					r[0][j], r[1][j], r[2][j], r[3][j])
			}
		}
		WinogradGradColumns43(o[:], row)
		for j := range n {
			for k := range o {
				check43(t, "output gradient columns", o[k][j], []float64{at43[0][k], at43[1][k], at43[2][k], at43[3][k]},
					row[4*j:4*j+4]...)
			}
		}
		var d [3][]float32
		for i := range d {
			d[i] = make([]float32, n)
		}
		Combine43(FilterAdjoint43, d[:], r[:])
		for j := range n {
			for i := range d {
				check43(t, "filter adjoint", d[i][j], []float64{g43[0][i], g43[1][i], g43[2][i], g43[3][i], g43[4][i], g43[5][i]},
					r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j])
			}
		}
		f := [3][]float32{r[0], r[1], r[2]}
		Combine43(Filter43, o[:], f[:])
		for j := range n {
			for k := range o {
				check43(t, "filter", o[k][j], g43[k][:], f[0][j], f[1][j], f[2][j])
			}
		}
	}
}

// TestWinogradInput43Plane compares the whole input transform of a plane with Bᵀ d B of each tile in
// float64, on planes of 1 to 17 tiles across.
func TestWinogradInput43Plane(t *testing.T) { forEachLevel(t, testWinogradInput43Plane) }

func testWinogradInput43Plane(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, across := range []int{1, 2, 3, 8, 17} {
		down := 3
		width := 4*roundUp8(across) + 8
		padded := data(rng, (4*down+2)*width, 0)
		stride := down*across + 11
		v := make([]float32, 36*stride)
		WinogradInput43Plane(v, stride, padded, make([]float32, 6*width), width, down, across)
		for ty := range down {
			for tx := range across {
				var bd [6][6]float64 // Bᵀ d
				for k := range 6 {
					for j := range 6 {
						for i := range 6 {
							bd[k][j] += bt43[k][i] * float64(padded[(4*ty+i)*width+4*tx+j])
						}
					}
				}
				for k := range 6 {
					for l := range 6 {
						var want float64
						for j := range 6 {
							want += bd[k][j] * bt43[l][j]
						}
						if got := v[(6*k+l)*stride+ty*across+tx]; math.Abs(float64(got)-want) > 20*tolerance43 {
							t.Fatalf("across %d, tile (%d, %d), point (%d, %d) = %g, want %g", across, ty, tx, k, l, got, want)
						}
					}
				}
			}
		}
	}
}
