//go:build !amd64 || purego

package vector

// HasGELU is false: there is no GELU kernel for this architecture.
const HasGELU = false

// GELU panics: callers check HasGELU first.
func GELU(y, d, x []float32, c *GELUConstants) {
	panic("vector: GELU on an architecture without a kernel")
}
