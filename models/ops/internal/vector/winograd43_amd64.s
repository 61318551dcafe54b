//go:build amd64 && !purego

#include "textflag.h"

// Coefficients of F(4x4, 3x3), as float32 bit patterns: 4, -5, 2, 8, 1/4, -1/6, 1/6, 1/12, 1/24.
DATA wino43<>+0(SB)/4, $0x40800000
DATA wino43<>+4(SB)/4, $0xc0a00000
DATA wino43<>+8(SB)/4, $0x40000000
DATA wino43<>+12(SB)/4, $0x41000000
DATA wino43<>+16(SB)/4, $0x3e800000
DATA wino43<>+20(SB)/4, $0xbe2aaaab
DATA wino43<>+24(SB)/4, $0x3e2aaaab
DATA wino43<>+28(SB)/4, $0x3daaaaab
DATA wino43<>+32(SB)/4, $0x3d2aaaab
GLOBL wino43<>(SB), RODATA|NOPTR, $36

// BT43: Bᵀ r of r0..r5 in Y4..Y9, with 4, -5 and 2 in Y12, Y13, Y14:
// o0 = (r4 + 4·r0) - 5·r2 in Y10, o1 = (r3 + r4) - 4·(r1 + r2) in Y1, o2 = (r4 - r3) + 4·(r1 - r2) in Y2,
// o3 = (r4 - r2) - 2·(r1 - r3) in Y3, o4 = (r4 - r2) + 2·(r1 - r3) in Y11, o5 = (r5 + 4·r1) - 5·r3 in Y9.
#define BT43 \
	VMOVAPS Y8, Y10; \
	VFMADD231PS Y4, Y12, Y10; \
	VFMADD231PS Y6, Y13, Y10; \
	VADDPS Y6, Y5, Y0; \
	VADDPS Y8, Y7, Y1; \
	VFNMADD231PS Y0, Y12, Y1; \
	VSUBPS Y6, Y5, Y0; \
	VSUBPS Y7, Y8, Y2; \
	VFMADD231PS Y0, Y12, Y2; \
	VSUBPS Y7, Y5, Y0; \
	VSUBPS Y6, Y8, Y3; \
	VMOVAPS Y3, Y11; \
	VFNMADD231PS Y0, Y14, Y3; \
	VFMADD231PS Y0, Y14, Y11; \
	VFMADD231PS Y5, Y12, Y9; \
	VFMADD231PS Y7, Y13, Y9

// STORE6(o0..o5) stores six results at AX of the six output pointers in DI, R8, R9, R10, R11, R13.
#define STORE6(o0, o1, o2, o3, o4, o5) \
	VMOVUPS o0, (DI)(AX*1); \
	VMOVUPS o1, (R8)(AX*1); \
	VMOVUPS o2, (R9)(AX*1); \
	VMOVUPS o3, (R10)(AX*1); \
	VMOVUPS o4, (R11)(AX*1); \
	VMOVUPS o5, (R13)(AX*1)

// AT43: Aᵀ m of m0..m5 in Y0..Y5, with 4, 2 and 8 in Y12, Y14, Y15: o0 = (m0 + (m1 + m2)) + (m3 + m4) in Y10,
// o1 = (m1 - m2) + 2·(m3 - m4) in Y11, o2 = (m1 + m2) + 4·(m3 + m4) in Y6, o3 = ((m1 - m2) + m5) + 8·(m3 - m4)
// in Y7.
#define AT43 \
	VADDPS Y2, Y1, Y6; \
	VSUBPS Y2, Y1, Y7; \
	VADDPS Y4, Y3, Y8; \
	VSUBPS Y4, Y3, Y9; \
	VADDPS Y6, Y0, Y10; \
	VADDPS Y8, Y10, Y10; \
	VMOVAPS Y7, Y11; \
	VFMADD231PS Y9, Y14, Y11; \
	VFMADD231PS Y8, Y12, Y6; \
	VADDPS Y5, Y7, Y7; \
	VFMADD231PS Y9, Y15, Y7

// AG43: A t of (a, b, c, d) in Y4..Y7, with 4 and 2 in Y12, Y14: o0 = a stays in Y4, o1 = (a + c) + (b + d)
// in Y2, o2 = (a + c) - (b + d) in Y3, o3 = (a + 4c) + 2·(b + 4d) in Y8, o4 = (a + 4c) - 2·(b + 4d) in Y10,
// o5 = d stays in Y7.
#define AG43 \
	VADDPS Y6, Y4, Y0; \
	VADDPS Y7, Y5, Y1; \
	VADDPS Y1, Y0, Y2; \
	VSUBPS Y1, Y0, Y3; \
	VMOVAPS Y4, Y8; \
	VFMADD231PS Y6, Y12, Y8; \
	VMOVAPS Y5, Y9; \
	VFMADD231PS Y7, Y12, Y9; \
	VMOVAPS Y8, Y10; \
	VFMADD231PS Y9, Y14, Y8; \
	VFNMADD231PS Y9, Y14, Y10

// PAIRS: Y0..Y3 holding tiles (t, t+1), (t+2, t+3), (t+4, t+5), (t+6, t+7) of 4 elements each, turned into
// per-lane 4x4 blocks and unpacked: Y0, Y2 then hold elements 0 and 1 of tiles (t, t+1) and (t+2, t+3) in the
// low lane and of t+4..t+7 in the high one, Y1, Y3 elements 2 and 3 (VPERM2F128 pairs the tiles 4 apart).
#define PAIRS \
	VPERM2F128 $0x20, Y2, Y0, Y4; \
	VPERM2F128 $0x20, Y3, Y1, Y5; \
	VPERM2F128 $0x31, Y2, Y0, Y6; \
	VPERM2F128 $0x31, Y3, Y1, Y7; \
	VUNPCKLPS Y6, Y4, Y0; \
	VUNPCKHPS Y6, Y4, Y1; \
	VUNPCKLPS Y7, Y5, Y2; \
	VUNPCKHPS Y7, Y5, Y3

// LOADTILES(off) loads the 32 elements of 8 tiles of 4 from off(SI) into Y0..Y3.
#define LOADTILES(off) \
	VMOVUPS off+0(SI), Y0; \
	VMOVUPS off+32(SI), Y1; \
	VMOVUPS off+64(SI), Y2; \
	VMOVUPS off+96(SI), Y3

// COLUMNS(c0, c1, c2, c3): after PAIRS, element k of the 8 tiles into ck.
#define COLUMNS(c0, c1, c2, c3) \
	VSHUFPS $0x44, Y2, Y0, c0; \
	VSHUFPS $0xEE, Y2, Y0, c1; \
	VSHUFPS $0x44, Y3, Y1, c2; \
	VSHUFPS $0xEE, Y3, Y1, c3

// LOADOUTS6 loads the six output pointers of *o+0(FP) into DI, R8, R9, R10, R11, R13.
#define LOADOUTS6 \
	MOVQ o+0(FP), AX; \
	MOVQ 0(AX), DI; \
	MOVQ 8(AX), R8; \
	MOVQ 16(AX), R9; \
	MOVQ 24(AX), R10; \
	MOVQ 32(AX), R11; \
	MOVQ 40(AX), R13

// func winogradInput43AVX2(o, r **float32, n int)
TEXT ·winogradInput43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+4(SB), Y13
	VBROADCASTSS wino43<>+8(SB), Y14
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

input43Loop:
	VMOVUPS (BX)(AX*1), Y4
	VMOVUPS (CX)(AX*1), Y5
	VMOVUPS (DX)(AX*1), Y6
	VMOVUPS (R12)(AX*1), Y7
	VMOVUPS (R14)(AX*1), Y8
	VMOVUPS (R15)(AX*1), Y9
	BT43
	STORE6(Y10, Y1, Y2, Y3, Y11, Y9)
	ADDQ $32, AX
	SUBQ $8, SI
	JNZ  input43Loop
	VZEROUPPER
	RET

// func winogradColumns43AVX2(o **float32, row *float32, n int)
//
// B over the six columns 4t..4t+5 of each tile t of a row, 8 tiles at a time: the 32 elements from 4t
// transposed give columns 0..3 of the 8 tiles, the 32 from 4t+4 columns 4 and 5.
TEXT ·winogradColumns43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+4(SB), Y13
	VBROADCASTSS wino43<>+8(SB), Y14
	LOADOUTS6
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

columns43Loop:
	LOADTILES(16)
	PAIRS
	COLUMNS(Y8, Y9, Y10, Y11)
	LOADTILES(0)
	PAIRS
	COLUMNS(Y4, Y5, Y6, Y7)
	BT43
	STORE6(Y10, Y1, Y2, Y3, Y11, Y9)
	ADDQ $128, SI
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  columns43Loop
	VZEROUPPER
	RET

// func winogradOutput43AVX2(o, m **float32, n int)
TEXT ·winogradOutput43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+8(SB), Y14
	VBROADCASTSS wino43<>+12(SB), Y15
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

output43Loop:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS (R9)(AX*1), Y1
	VMOVUPS (R10)(AX*1), Y2
	VMOVUPS (R11)(AX*1), Y3
	VMOVUPS (R12)(AX*1), Y4
	VMOVUPS (R13)(AX*1), Y5
	AT43
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y11, (SI)(AX*1)
	VMOVUPS Y6, (DX)(AX*1)
	VMOVUPS Y7, (BX)(AX*1)
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  output43Loop
	VZEROUPPER
	RET

// func winogradOutputInterleave43AVX2(out *float32, m **float32, n int)
//
// Aᵀ m as winogradOutput43AVX2, the four results of each index i stored together at out[4i..4i+3]: the
// transpose of PAIRS and COLUMNS.
TEXT ·winogradOutputInterleave43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+8(SB), Y14
	VBROADCASTSS wino43<>+12(SB), Y15
	MOVQ out+0(FP), DI
	MOVQ m+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ 32(AX), R12
	MOVQ 40(AX), R13
	MOVQ n+16(FP), CX
	XORQ AX, AX

interleave43Loop:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS (R9)(AX*1), Y1
	VMOVUPS (R10)(AX*1), Y2
	VMOVUPS (R11)(AX*1), Y3
	VMOVUPS (R12)(AX*1), Y4
	VMOVUPS (R13)(AX*1), Y5
	AT43
	VUNPCKLPS Y11, Y10, Y0     // o0 o1 of i, i+1 | i+4, i+5
	VUNPCKHPS Y11, Y10, Y1     // i+2, i+3 | i+6, i+7
	VUNPCKLPS Y7, Y6, Y2       // o2 o3
	VUNPCKHPS Y7, Y6, Y3
	VSHUFPS $0x44, Y2, Y0, Y4  // i | i+4
	VSHUFPS $0xEE, Y2, Y0, Y5  // i+1 | i+5
	VSHUFPS $0x44, Y3, Y1, Y6  // i+2 | i+6
	VSHUFPS $0xEE, Y3, Y1, Y8  // i+3 | i+7
	VPERM2F128 $0x20, Y5, Y4, Y0
	VPERM2F128 $0x20, Y8, Y6, Y1
	VPERM2F128 $0x31, Y5, Y4, Y2
	VPERM2F128 $0x31, Y8, Y6, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  interleave43Loop
	VZEROUPPER
	RET

// func winogradOutputGrad43AVX2(o, t **float32, n int)
TEXT ·winogradOutputGrad43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+8(SB), Y14
	LOADOUTS6
	MOVQ t+8(FP), SI
	MOVQ 0(SI), BX
	MOVQ 8(SI), CX
	MOVQ 16(SI), DX
	MOVQ 24(SI), R12
	MOVQ n+16(FP), SI
	XORQ AX, AX

outputGrad43Loop:
	VMOVUPS (BX)(AX*1), Y4
	VMOVUPS (CX)(AX*1), Y5
	VMOVUPS (DX)(AX*1), Y6
	VMOVUPS (R12)(AX*1), Y7
	AG43
	STORE6(Y4, Y2, Y3, Y8, Y10, Y7)
	ADDQ $32, AX
	SUBQ $8, SI
	JNZ  outputGrad43Loop
	VZEROUPPER
	RET

// func winogradGradColumns43AVX2(o **float32, row *float32, n int)
//
// AG43 of the 4-vectors row[4t .. 4t+3] of n tiles t, 8 at a time, gathered as winogradColumns43AVX2 does.
TEXT ·winogradGradColumns43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12
	VBROADCASTSS wino43<>+8(SB), Y14
	LOADOUTS6
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

gradColumns43Loop:
	LOADTILES(0)
	PAIRS
	COLUMNS(Y4, Y5, Y6, Y7)
	AG43
	STORE6(Y4, Y2, Y3, Y8, Y10, Y7)
	ADDQ $128, SI
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  gradColumns43Loop
	VZEROUPPER
	RET

// func winogradFilter43AVX2(o, f **float32, n int)
//
// G f of (a, b, c): a·(1/4), ((a + c) + b)·(-1/6), ((a + c) - b)·(-1/6), (a·(1/24) + c·(1/6)) ± b·(1/12), c.
TEXT ·winogradFilter43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+16(SB), Y11
	VBROADCASTSS wino43<>+20(SB), Y12
	VBROADCASTSS wino43<>+24(SB), Y13
	VBROADCASTSS wino43<>+28(SB), Y14
	VBROADCASTSS wino43<>+32(SB), Y15
	LOADOUTS6
	MOVQ f+8(FP), SI
	MOVQ 0(SI), BX
	MOVQ 8(SI), DX
	MOVQ 16(SI), R12
	MOVQ n+16(FP), CX
	XORQ AX, AX

filter43Loop:
	VMOVUPS (BX)(AX*1), Y0     // a
	VMOVUPS (DX)(AX*1), Y1     // b
	VMOVUPS (R12)(AX*1), Y2    // c
	VMULPS  Y11, Y0, Y3
	VADDPS  Y2, Y0, Y4         // s = a + c
	VADDPS  Y1, Y4, Y5
	VMULPS  Y12, Y5, Y5
	VSUBPS  Y1, Y4, Y6
	VMULPS  Y12, Y6, Y6
	VMULPS  Y15, Y0, Y7
	VFMADD231PS Y2, Y13, Y7    // p = a·(1/24) + c·(1/6)
	VMOVAPS Y7, Y8
	VFMADD231PS Y1, Y14, Y8
	VFNMADD231PS Y1, Y14, Y7
	STORE6(Y3, Y5, Y6, Y8, Y7, Y2)
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  filter43Loop
	VZEROUPPER
	RET

// func winogradFilterAdjoint43AVX2(o, f **float32, n int)
//
// Gᵀ f of (f0..f5): (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24), (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
// ((f3 + f4) - (f1 + f2))·(1/6) + f5.
TEXT ·winogradFilterAdjoint43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+16(SB), Y11
	VBROADCASTSS wino43<>+24(SB), Y13
	VBROADCASTSS wino43<>+28(SB), Y14
	VBROADCASTSS wino43<>+32(SB), Y15
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

filterAdjoint43Loop:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS (R9)(AX*1), Y1
	VMOVUPS (R10)(AX*1), Y2
	VMOVUPS (R11)(AX*1), Y3
	VMOVUPS (R12)(AX*1), Y4
	VMOVUPS (R13)(AX*1), Y5
	VADDPS  Y2, Y1, Y6         // f1 + f2
	VADDPS  Y4, Y3, Y7         // f3 + f4
	VMULPS  Y11, Y0, Y8
	VFNMADD231PS Y6, Y13, Y8
	VFMADD231PS Y7, Y15, Y8
	VSUBPS  Y1, Y2, Y9
	VMULPS  Y13, Y9, Y9
	VSUBPS  Y4, Y3, Y10
	VFMADD231PS Y10, Y14, Y9
	VSUBPS  Y6, Y7, Y10
	VFMADD231PS Y10, Y13, Y5
	VMOVUPS Y8, (DI)(AX*1)
	VMOVUPS Y9, (SI)(AX*1)
	VMOVUPS Y5, (DX)(AX*1)
	ADDQ $32, AX
	SUBQ $8, CX
	JNZ  filterAdjoint43Loop
	VZEROUPPER
	RET
