package train

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestContrastiveRows checks the contrastive layout of one image: rows a@q, b@q, a@q+2, b@q+2, each the
// rotate90 of its view, with q drawn in {0, 1} (both values seen).
func TestContrastiveRows(t *testing.T) {
	const c, h, w = 1, 4, 4
	a, b := make([]float32, 16), make([]float32, 16)
	for i := range a {
		a[i], b[i] = float32(i), float32(100+i)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[int]bool{}
	for range 20 {
		dst := make([]float32, 4*16)
		var turns [4]int
		contrastiveRows(rng, a, b, dst, c, h, w, &turns)
		q := turns[0]
		if q > 1 || turns != [4]int{q, q, q + 2, q + 2} {
			t.Fatalf("turns %v, want q, q, q+2, q+2 with q in {0, 1}", turns)
		}
		seen[q] = true
		for j, src := range [][]float32{a, b, a, b} {
			want := make([]float32, 16)
			rotate90(src, want, c, h, w, turns[j])
			if !slices.Equal(dst[j*16:(j+1)*16], want) {
				t.Errorf("row %d is not view %d turned %d times", j, j%2, turns[j])
			}
		}
	}
	if !seen[0] || !seen[1] {
		t.Errorf("turn pairs seen %v, want both {0,2} and {1,3}", seen)
	}
}
