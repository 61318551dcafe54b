package vector

// Kernel43 names an element-wise kernel of Winograd's F(4x4, 3x3) (see Combine43): each output slice is a
// fixed linear combination of the input slices at the same index.
type Kernel43 int

const (
	// Input43 writes Bᵀ r, the input transform of F(4x4, 3x3), at every index of the six slices r:
	//
	//	o0 = (r4 + 4·r0) - 5·r2,  o1 = (r3 + r4) - 4·(r1 + r2),  o2 = (r4 - r3) + 4·(r1 - r2),
	//	o3 = (r4 - r2) - 2·(r1 - r3),  o4 = (r4 - r2) + 2·(r1 - r3),  o5 = (r5 + 4·r1) - 5·r3
	Input43 Kernel43 = iota

	// Output43 writes Aᵀ m, the output transform of F(4x4, 3x3), at every index of the six slices m:
	//
	//	o0 = (m0 + (m1 + m2)) + (m3 + m4),  o1 = (m1 - m2) + 2·(m3 - m4),
	//	o2 = (m1 + m2) + 4·(m3 + m4),  o3 = ((m1 - m2) + m5) + 8·(m3 - m4)
	Output43

	// Filter43 writes G f, the filter transform of F(4x4, 3x3), of the 3-vectors (a, b, c) at every
	// index of the three slices f:
	//
	//	o0 = a·(1/4),  o1 = ((a + c) + b)·(-1/6),  o2 = ((a + c) - b)·(-1/6),
	//	o3 = (a·(1/24) + c·(1/6)) + b·(1/12),  o4 = (a·(1/24) + c·(1/6)) - b·(1/12),  o5 = c
	//
	// the coefficients rounded to float32.
	Filter43

	// OutputGrad43 writes A t, the adjoint of Output43, of the 4-vectors (a, b, c, d) at every
	// index of the four slices t:
	//
	//	o0 = a,  o1 = (a + c) + (b + d),  o2 = (a + c) - (b + d),  o3 = (a + 4·c) + 2·(b + 4·d),
	//	o4 = (a + 4·c) - 2·(b + 4·d),  o5 = d
	OutputGrad43

	// FilterAdjoint43 writes Gᵀ f, the adjoint of Filter43, of the 6-vectors f at every index:
	//
	//	o0 = (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24),  o1 = (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
	//	o2 = ((f3 + f4) - (f1 + f2))·(1/6) + f5
	//
	// the coefficients rounded to float32.
	FilterAdjoint43
)

// shapes43 holds each kernel's name and numbers of output and input slices.
var shapes43 = [...]struct {
	name      string
	outs, ins int
}{{"Input43", 6, 6}, {"Output43", 4, 6}, {"Filter43", 6, 3}, {"OutputGrad43", 6, 4}, {"FilterAdjoint43", 3, 6}}
