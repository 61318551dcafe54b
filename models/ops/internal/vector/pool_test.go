package vector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// poolKey is the order MaxPoolRowPair documents: float32 bits mapped to integers.
func poolKey(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ (b >> 31 & 0x7fffffff)
}

// poolValues draws from values that make ties and the special cases common.
func poolValues(rng *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), -float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0x00000001)}
	x := make([]float32, n)
	for i := range x {
		if rng.IntN(2) == 0 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.NormFloat64())
		}
	}
	return x
}

func TestMaxPoolRowPair(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 4; n <= 40; n++ {
		for range 20 {
			top, bottom := poolValues(rng, 2*n+3), poolValues(rng, 2*n+3) // rows may be longer than 2n
			y, argmax := make([]float32, n), make([]uint8, n)
			MaxPoolRowPair(y, argmax, top, bottom)
			for j := range n {
				window := []float32{top[2*j], top[2*j+1], bottom[2*j], bottom[2*j+1]}
				at := 0
				for p, v := range window {
					if poolKey(v) > poolKey(window[at]) {
						at = p
					}
				}
				if math.Float32bits(y[j]) != math.Float32bits(window[at]) || int(argmax[j]) != at {
					t.Fatalf("n %d, window %d %v: got %v at %d, want %v at %d", n, j, window, y[j], argmax[j], window[at], at)
				}
			}
		}
	}
}

func TestMaxPoolGradRowPair(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 4; n <= 40; n++ {
		for range 20 {
			dy, argmax := poolValues(rng, n), make([]uint8, n)
			for j := range argmax {
				argmax[j] = uint8(rng.IntN(4))
			}
			top, bottom := poolValues(rng, 2*n+3), poolValues(rng, 2*n+3) // stale values to be overwritten
			beyond := [2]uint32{math.Float32bits(top[2*n]), math.Float32bits(bottom[2*n])}
			MaxPoolGradRowPair(top, bottom, dy, argmax)
			for j := range n {
				got := []float32{top[2*j], top[2*j+1], bottom[2*j], bottom[2*j+1]}
				for p, v := range got {
					want := float32(0)
					if p == int(argmax[j]) {
						want = dy[j]
					}
					if math.Float32bits(v) != math.Float32bits(want) {
						t.Fatalf("n %d, window %d (dy %v at %d): position %d holds %v, want %v", n, j, dy[j], argmax[j], p, v, want)
					}
				}
			}
			if math.Float32bits(top[2*n]) != beyond[0] || math.Float32bits(bottom[2*n]) != beyond[1] {
				t.Fatalf("n %d: wrote beyond 2n", n)
			}
		}
	}
}

func TestMaxPoolWindows3s2(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 8; n <= 40; n++ {
		for range 20 {
			row := poolValues(rng, 2*n+2+rng.IntN(3))
			keys, at := make([]int32, n), make([]int32, n)
			col0 := int32(rng.IntN(100))
			MaxPoolWindows3s2(keys, at, row, col0)
			for j := range n {
				p := 0
				for q := 1; q < 3; q++ {
					if poolKey(row[2*j+q]) > poolKey(row[2*j+p]) {
						p = q
					}
				}
				if keys[j] != poolKey(row[2*j+p]) || at[j] != col0+int32(2*j+p) {
					t.Fatalf("n %d, window %d %v: key %d at %d, want %d at %d", n, j, row[2*j:2*j+3], keys[j], at[j], poolKey(row[2*j+p]), col0+int32(2*j+p))
				}
			}
		}
	}
}

func TestKeepFirstMax(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for n := 8; n <= 40; n++ {
		best, at, keys, keyAt := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		for j := range n {
			best[j], keys[j] = int32(rng.IntN(5)-2), int32(rng.IntN(5)-2) // ties are common
			if rng.IntN(4) == 0 {
				best[j], keys[j] = int32(rng.Uint32()), int32(rng.Uint32())
			}
			at[j], keyAt[j] = int32(rng.IntN(1000)), int32(rng.IntN(1000))
		}
		wantBest, wantAt := append([]int32(nil), best...), append([]int32(nil), at...)
		for j := range n {
			if keys[j] > wantBest[j] {
				wantBest[j], wantAt[j] = keys[j], keyAt[j]
			}
		}
		KeepFirstMax(best, at, keys, keyAt)
		for j := range n {
			if best[j] != wantBest[j] || at[j] != wantAt[j] {
				t.Fatalf("n %d, element %d: %d at %d, want %d at %d", n, j, best[j], at[j], wantBest[j], wantAt[j])
			}
		}
	}
}

func TestMaxPoolRowPairRejectsMisuse(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	row := make([]float32, 16)
	for i, call := range []func(){
		func() { MaxPoolRowPair(make([]float32, 3), make([]uint8, 3), row, row) },
		func() { MaxPoolRowPair(make([]float32, 8), make([]uint8, 7), row, row) },
		func() { MaxPoolRowPair(make([]float32, 8), make([]uint8, 8), row[:15], row) },
		func() { MaxPoolGradRowPair(row, row, make([]float32, 3), make([]uint8, 3)) },
		func() { MaxPoolGradRowPair(row, row[:15], make([]float32, 8), make([]uint8, 8)) },
		func() { MaxPoolWindows3s2(make([]int32, 7), make([]int32, 7), row, 0) },
		func() { MaxPoolWindows3s2(make([]int32, 8), make([]int32, 8), make([]float32, 17), 0) },
		func() { KeepFirstMax(make([]int32, 8), make([]int32, 8), make([]int32, 8), make([]int32, 9)) },
		func() { KeepFirstMax(make([]int32, 7), make([]int32, 7), make([]int32, 7), make([]int32, 7)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("case %d: no panic", i)
				}
			}()
			call()
		}()
	}
}
