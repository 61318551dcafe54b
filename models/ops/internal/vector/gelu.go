package vector

// GELUConstants are the constants of GELU, each repeated in the four float64 lanes of a 256-bit register. Their
// order and meaning are fixed by the assembly (gelu_amd64.s); package models/ops fills them from the
// constants of its portable GELU, so that both evaluate the same formula.
type GELUConstants [24][4]float64
