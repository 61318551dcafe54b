//go:build !amd64 || purego

package vector

// MaxPoolRowPair panics: callers check HasAVX2 first.
func MaxPoolRowPair(y []float32, argmax []uint8, top, bottom []float32) { unavailable() }

// MaxPoolGradRowPair panics: callers check HasAVX2 first.
func MaxPoolGradRowPair(top, bottom, dy []float32, argmax []uint8) { unavailable() }
