package vector

import (
	"math/rand/v2"
	"testing"
)

// TestWinogradPasses compares the Winograd transform passes with their formulas, element by element: each
// output is one addition or subtraction, so float32 results must be equal.
func TestWinogradPasses(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
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
