//go:build !amd64 || purego

package vector

// GELU panics: callers check HasAVX2 first.
func GELU(y, d, x []float32, c *GELUConstants) { unavailable() }
