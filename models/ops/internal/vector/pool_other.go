//go:build !amd64 || purego

package vector

// MaxPoolRowPair panics: callers check HasAVX2 first.
func MaxPoolRowPair(y []float32, argmax []uint8, top, bottom []float32) { unavailable() }

// MaxPoolGradRowPair panics: callers check HasAVX2 first.
func MaxPoolGradRowPair(top, bottom, dy []float32, argmax []uint8) { unavailable() }

// MaxPoolWindows3s2 panics: callers check HasAVX2 first.
func MaxPoolWindows3s2(keys, at []int32, row []float32, col0 int32) { unavailable() }

// KeepFirstMax panics: callers check HasAVX2 first.
func KeepFirstMax(best, at, keys, keyAt []int32) { unavailable() }
