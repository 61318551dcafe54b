package data

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkResizedCrop cuts a random resized 224x224 crop from a 341x256
// RGB photo kept at load resolution: the per-image cost of photo training
// augmentation.
func BenchmarkResizedCrop(b *testing.B) {
	src := make([]uint8, 3*256*341)
	for i := range src {
		src[i] = uint8(i * 7)
	}
	dst := make([]uint8, 3*224*224)
	rng := rand.New(rand.NewPCG(1, 2))
	r := DefaultResizedCrop()
	for range b.N {
		r.Apply(rng, src, 3, 256, 341, dst, 224, 224)
	}
}
