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
