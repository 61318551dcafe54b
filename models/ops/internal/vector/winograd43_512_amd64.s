//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 versions of the element-wise F(4x4, 3x3) kernels of winograd43_amd64.s (Input43, Output43,
// OutputGrad43, Filter43, FilterAdjoint43), the same instructions on ZMM registers, 16 lanes at a time: n is
// a positive multiple of 16 (Combine43 runs the last 8 of a length that is not with the AVX2 kernel). The
// macros are those of winograd43_amd64.s on ZMM registers. AVX-512 F only.

DATA wino43z<>+0(SB)/4, $0x40800000
DATA wino43z<>+4(SB)/4, $0xc0a00000
DATA wino43z<>+8(SB)/4, $0x40000000
DATA wino43z<>+12(SB)/4, $0x41000000
DATA wino43z<>+16(SB)/4, $0x3e800000
DATA wino43z<>+20(SB)/4, $0xbe2aaaab
DATA wino43z<>+24(SB)/4, $0x3e2aaaab
DATA wino43z<>+28(SB)/4, $0x3daaaaab
DATA wino43z<>+32(SB)/4, $0x3d2aaaab
GLOBL wino43z<>(SB), RODATA|NOPTR, $36

// BT43Z: Bᵀ r of r0..r5 in Z4..Z9, with 4, -5 and 2 in Z12, Z13, Z14:
// o0 = (r4 + 4·r0) - 5·r2 in Z10, o1 = (r3 + r4) - 4·(r1 + r2) in Z1, o2 = (r4 - r3) + 4·(r1 - r2) in Z2,
// o3 = (r4 - r2) - 2·(r1 - r3) in Z3, o4 = (r4 - r2) + 2·(r1 - r3) in Z11, o5 = (r5 + 4·r1) - 5·r3 in Z9.
#define BT43Z \
	VMOVAPS Z8, Z10; \
	VFMADD231PS Z4, Z12, Z10; \
	VFMADD231PS Z6, Z13, Z10; \
	VADDPS Z6, Z5, Z0; \
	VADDPS Z8, Z7, Z1; \
	VFNMADD231PS Z0, Z12, Z1; \
	VSUBPS Z6, Z5, Z0; \
	VSUBPS Z7, Z8, Z2; \
	VFMADD231PS Z0, Z12, Z2; \
	VSUBPS Z7, Z5, Z0; \
	VSUBPS Z6, Z8, Z3; \
	VMOVAPS Z3, Z11; \
	VFNMADD231PS Z0, Z14, Z3; \
	VFMADD231PS Z0, Z14, Z11; \
	VFMADD231PS Z5, Z12, Z9; \
	VFMADD231PS Z7, Z13, Z9

// STORE6Z(o0..o5) stores six results at AX of the six output pointers in DI, R8, R9, R10, R11, R13.
#define STORE6Z(o0, o1, o2, o3, o4, o5) \
	VMOVUPS o0, (DI)(AX*1); \
	VMOVUPS o1, (R8)(AX*1); \
	VMOVUPS o2, (R9)(AX*1); \
	VMOVUPS o3, (R10)(AX*1); \
	VMOVUPS o4, (R11)(AX*1); \
	VMOVUPS o5, (R13)(AX*1)

// AT43Z: Aᵀ m of m0..m5 in Z0..Z5, with 4, 2 and 8 in Z12, Z14, Z15: o0 = (m0 + (m1 + m2)) + (m3 + m4) in Z10,
// o1 = (m1 - m2) + 2·(m3 - m4) in Z11, o2 = (m1 + m2) + 4·(m3 + m4) in Z6, o3 = ((m1 - m2) + m5) + 8·(m3 - m4)
// in Z7.
#define AT43Z \
	VADDPS Z2, Z1, Z6; \
	VSUBPS Z2, Z1, Z7; \
	VADDPS Z4, Z3, Z8; \
	VSUBPS Z4, Z3, Z9; \
	VADDPS Z6, Z0, Z10; \
	VADDPS Z8, Z10, Z10; \
	VMOVAPS Z7, Z11; \
	VFMADD231PS Z9, Z14, Z11; \
	VFMADD231PS Z8, Z12, Z6; \
	VADDPS Z5, Z7, Z7; \
	VFMADD231PS Z9, Z15, Z7

// AG43Z: A t of (a, b, c, d) in Z4..Z7, with 4 and 2 in Z12, Z14: o0 = a stays in Z4, o1 = (a + c) + (b + d)
// in Z2, o2 = (a + c) - (b + d) in Z3, o3 = (a + 4c) + 2·(b + 4d) in Z8, o4 = (a + 4c) - 2·(b + 4d) in Z10,
// o5 = d stays in Z7.
#define AG43Z \
	VADDPS Z6, Z4, Z0; \
	VADDPS Z7, Z5, Z1; \
	VADDPS Z1, Z0, Z2; \
	VSUBPS Z1, Z0, Z3; \
	VMOVAPS Z4, Z8; \
	VFMADD231PS Z6, Z12, Z8; \
	VMOVAPS Z5, Z9; \
	VFMADD231PS Z7, Z12, Z9; \
	VMOVAPS Z8, Z10; \
	VFMADD231PS Z9, Z14, Z8; \
	VFNMADD231PS Z9, Z14, Z10

// LOADOUTS6 loads the six output pointers of *o+0(FP) into DI, R8, R9, R10, R11, R13.
#define LOADOUTS6 \
	MOVQ o+0(FP), AX; \
	MOVQ 0(AX), DI; \
	MOVQ 8(AX), R8; \
	MOVQ 16(AX), R9; \
	MOVQ 24(AX), R10; \
	MOVQ 32(AX), R11; \
	MOVQ 40(AX), R13

// func winogradInput43AVX512(o, r **float32, n int)
TEXT ·winogradInput43AVX512(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43z<>+0(SB), Z12
	VBROADCASTSS wino43z<>+4(SB), Z13
	VBROADCASTSS wino43z<>+8(SB), Z14
	LOADOUTS6
	MOVQ r+8(FP), SI
	MOVQ 0(SI), BX
	MOVQ 8(SI), CX
	MOVQ 16(SI), DX
	MOVQ 24(SI), R12
	MOVQ 32(SI), R14
	MOVQ 40(SI), R15
	MOVQ n+16(FP), SI
	XORQ AX, AX

input43Loop512:
	VMOVUPS (BX)(AX*1), Z4
	VMOVUPS (CX)(AX*1), Z5
	VMOVUPS (DX)(AX*1), Z6
	VMOVUPS (R12)(AX*1), Z7
	VMOVUPS (R14)(AX*1), Z8
	VMOVUPS (R15)(AX*1), Z9
	BT43Z
	STORE6Z(Z10, Z1, Z2, Z3, Z11, Z9)
	ADDQ $64, AX
	SUBQ $16, SI
	JNZ  input43Loop512
	VZEROUPPER
	RET

// func winogradOutput43AVX512(o, m **float32, n int)
TEXT ·winogradOutput43AVX512(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43z<>+0(SB), Z12
	VBROADCASTSS wino43z<>+8(SB), Z14
	VBROADCASTSS wino43z<>+12(SB), Z15
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), SI
	MOVQ 16(AX), DX
	MOVQ 24(AX), BX
	MOVQ m+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ 32(AX), R12
	MOVQ 40(AX), R13
	MOVQ n+16(FP), CX
	XORQ AX, AX

output43Loop512:
	VMOVUPS (R8)(AX*1), Z0
	VMOVUPS (R9)(AX*1), Z1
	VMOVUPS (R10)(AX*1), Z2
	VMOVUPS (R11)(AX*1), Z3
	VMOVUPS (R12)(AX*1), Z4
	VMOVUPS (R13)(AX*1), Z5
	AT43Z
	VMOVUPS Z10, (DI)(AX*1)
	VMOVUPS Z11, (SI)(AX*1)
	VMOVUPS Z6, (DX)(AX*1)
	VMOVUPS Z7, (BX)(AX*1)
	ADDQ $64, AX
	SUBQ $16, CX
	JNZ  output43Loop512
	VZEROUPPER
	RET

// func winogradOutputGrad43AVX512(o, t **float32, n int)
TEXT ·winogradOutputGrad43AVX512(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43z<>+0(SB), Z12
	VBROADCASTSS wino43z<>+8(SB), Z14
	LOADOUTS6
	MOVQ t+8(FP), SI
	MOVQ 0(SI), BX
	MOVQ 8(SI), CX
	MOVQ 16(SI), DX
	MOVQ 24(SI), R12
	MOVQ n+16(FP), SI
	XORQ AX, AX

outputGrad43Loop512:
	VMOVUPS (BX)(AX*1), Z4
	VMOVUPS (CX)(AX*1), Z5
	VMOVUPS (DX)(AX*1), Z6
	VMOVUPS (R12)(AX*1), Z7
	AG43Z
	STORE6Z(Z4, Z2, Z3, Z8, Z10, Z7)
	ADDQ $64, AX
	SUBQ $16, SI
	JNZ  outputGrad43Loop512
	VZEROUPPER
	RET

// func winogradFilter43AVX512(o, f **float32, n int)
//
// G f of (a, b, c): a·(1/4), ((a + c) + b)·(-1/6), ((a + c) - b)·(-1/6), (a·(1/24) + c·(1/6)) ± b·(1/12), c.
TEXT ·winogradFilter43AVX512(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43z<>+16(SB), Z11
	VBROADCASTSS wino43z<>+20(SB), Z12
	VBROADCASTSS wino43z<>+24(SB), Z13
	VBROADCASTSS wino43z<>+28(SB), Z14
	VBROADCASTSS wino43z<>+32(SB), Z15
	LOADOUTS6
	MOVQ f+8(FP), SI
	MOVQ 0(SI), BX
	MOVQ 8(SI), DX
	MOVQ 16(SI), R12
	MOVQ n+16(FP), CX
	XORQ AX, AX

filter43Loop512:
	VMOVUPS (BX)(AX*1), Z0     // a
	VMOVUPS (DX)(AX*1), Z1     // b
	VMOVUPS (R12)(AX*1), Z2    // c
	VMULPS  Z11, Z0, Z3
	VADDPS  Z2, Z0, Z4         // s = a + c
	VADDPS  Z1, Z4, Z5
	VMULPS  Z12, Z5, Z5
	VSUBPS  Z1, Z4, Z6
	VMULPS  Z12, Z6, Z6
	VMULPS  Z15, Z0, Z7
	VFMADD231PS Z2, Z13, Z7    // p = a·(1/24) + c·(1/6)
	VMOVAPS Z7, Z8
	VFMADD231PS Z1, Z14, Z8
	VFNMADD231PS Z1, Z14, Z7
	STORE6Z(Z3, Z5, Z6, Z8, Z7, Z2)
	ADDQ $64, AX
	SUBQ $16, CX
	JNZ  filter43Loop512
	VZEROUPPER
	RET

// func winogradFilterAdjoint43AVX512(o, f **float32, n int)
//
// Gᵀ f of (f0..f5): (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24), (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
// ((f3 + f4) - (f1 + f2))·(1/6) + f5.
TEXT ·winogradFilterAdjoint43AVX512(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43z<>+16(SB), Z11
	VBROADCASTSS wino43z<>+24(SB), Z13
	VBROADCASTSS wino43z<>+28(SB), Z14
	VBROADCASTSS wino43z<>+32(SB), Z15
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), SI
	MOVQ 16(AX), DX
	MOVQ f+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ 32(AX), R12
	MOVQ 40(AX), R13
	MOVQ n+16(FP), CX
	XORQ AX, AX

filterAdjoint43Loop512:
	VMOVUPS (R8)(AX*1), Z0
	VMOVUPS (R9)(AX*1), Z1
	VMOVUPS (R10)(AX*1), Z2
	VMOVUPS (R11)(AX*1), Z3
	VMOVUPS (R12)(AX*1), Z4
	VMOVUPS (R13)(AX*1), Z5
	VADDPS  Z2, Z1, Z6         // f1 + f2
	VADDPS  Z4, Z3, Z7         // f3 + f4
	VMULPS  Z11, Z0, Z8
	VFNMADD231PS Z6, Z13, Z8
	VFMADD231PS Z7, Z15, Z8
	VSUBPS  Z1, Z2, Z9
	VMULPS  Z13, Z9, Z9
	VSUBPS  Z4, Z3, Z10
	VFMADD231PS Z10, Z14, Z9
	VSUBPS  Z6, Z7, Z10
	VFMADD231PS Z10, Z13, Z5
	VMOVUPS Z8, (DI)(AX*1)
	VMOVUPS Z9, (SI)(AX*1)
	VMOVUPS Z5, (DX)(AX*1)
	ADDQ $64, AX
	SUBQ $16, CX
	JNZ  filterAdjoint43Loop512
	VZEROUPPER
	RET
