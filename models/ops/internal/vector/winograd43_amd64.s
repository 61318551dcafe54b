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

// func winogradInput43AVX2(o, r *[6]*float32, n int)
TEXT ·winogradInput43AVX2(SB), NOSPLIT, $0-24
	// The coefficients first: R15 holds a pointer below, and a global's address may need R15 when linking
	// dynamically.
	VBROADCASTSS wino43<>+0(SB), Y12 // 4
	VBROADCASTSS wino43<>+4(SB), Y13 // -5
	VBROADCASTSS wino43<>+8(SB), Y14 // 2
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), SI
	MOVQ 16(AX), DX
	MOVQ 24(AX), BX
	MOVQ 32(AX), R8
	MOVQ 40(AX), R9
	MOVQ r+8(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	MOVQ 32(AX), R14
	MOVQ 40(AX), R15
	MOVQ n+16(FP), CX
	XORQ AX, AX

input43Loop:
	VMOVUPS (R10)(AX*1), Y0
	VMOVUPS (R11)(AX*1), Y1
	VMOVUPS (R12)(AX*1), Y2
	VMOVUPS (R13)(AX*1), Y3
	VMOVUPS (R14)(AX*1), Y4
	VMOVUPS (R15)(AX*1), Y5
	VMOVAPS Y4, Y10
	VFMADD231PS Y0, Y12, Y10   // r4 + 4·r0
	VFMADD231PS Y2, Y13, Y10   // ... - 5·r2
	VADDPS  Y2, Y1, Y6         // r1 + r2
	VADDPS  Y4, Y3, Y7         // r3 + r4
	VFNMADD231PS Y6, Y12, Y7   // (r3 + r4) - 4·(r1 + r2)
	VSUBPS  Y2, Y1, Y6         // r1 - r2
	VSUBPS  Y3, Y4, Y8         // r4 - r3
	VFMADD231PS Y6, Y12, Y8    // (r4 - r3) + 4·(r1 - r2)
	VSUBPS  Y3, Y1, Y6         // r1 - r3
	VSUBPS  Y2, Y4, Y9         // r4 - r2
	VMOVAPS Y9, Y11
	VFNMADD231PS Y6, Y14, Y9   // (r4 - r2) - 2·(r1 - r3)
	VFMADD231PS Y6, Y14, Y11   // (r4 - r2) + 2·(r1 - r3)
	VFMADD231PS Y1, Y12, Y5    // r5 + 4·r1
	VFMADD231PS Y3, Y13, Y5    // ... - 5·r3
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y7, (SI)(AX*1)
	VMOVUPS Y8, (DX)(AX*1)
	VMOVUPS Y9, (BX)(AX*1)
	VMOVUPS Y11, (R8)(AX*1)
	VMOVUPS Y5, (R9)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     input43Loop
	VZEROUPPER
	RET

// func winogradOutput43AVX2(o *[4]*float32, m *[6]*float32, n int)
TEXT ·winogradOutput43AVX2(SB), NOSPLIT, $0-24
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
	VBROADCASTSS wino43<>+0(SB), Y12  // 4
	VBROADCASTSS wino43<>+8(SB), Y14  // 2
	VBROADCASTSS wino43<>+12(SB), Y15 // 8
	XORQ AX, AX

output43Loop:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS (R9)(AX*1), Y1
	VMOVUPS (R10)(AX*1), Y2
	VMOVUPS (R11)(AX*1), Y3
	VMOVUPS (R12)(AX*1), Y4
	VMOVUPS (R13)(AX*1), Y5
	VADDPS  Y2, Y1, Y6         // s12 = m1 + m2
	VSUBPS  Y2, Y1, Y7         // d12 = m1 - m2
	VADDPS  Y4, Y3, Y8         // s34 = m3 + m4
	VSUBPS  Y4, Y3, Y9         // d34 = m3 - m4
	VADDPS  Y6, Y0, Y10
	VADDPS  Y8, Y10, Y10       // (m0 + s12) + s34
	VMOVAPS Y7, Y11
	VFMADD231PS Y9, Y14, Y11   // d12 + 2·d34
	VFMADD231PS Y8, Y12, Y6    // s12 + 4·s34
	VADDPS  Y5, Y7, Y7
	VFMADD231PS Y9, Y15, Y7    // (d12 + m5) + 8·d34
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y11, (SI)(AX*1)
	VMOVUPS Y6, (DX)(AX*1)
	VMOVUPS Y7, (BX)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     output43Loop
	VZEROUPPER
	RET

// func winogradFilter43AVX2(o *[6]*float32, f *[3]*float32, n int)
TEXT ·winogradFilter43AVX2(SB), NOSPLIT, $0-24
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), SI
	MOVQ 16(AX), DX
	MOVQ 24(AX), BX
	MOVQ 32(AX), R8
	MOVQ 40(AX), R9
	MOVQ f+8(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ n+16(FP), CX
	VBROADCASTSS wino43<>+16(SB), Y11 // 1/4
	VBROADCASTSS wino43<>+20(SB), Y12 // -1/6
	VBROADCASTSS wino43<>+24(SB), Y13 // 1/6
	VBROADCASTSS wino43<>+28(SB), Y14 // 1/12
	VBROADCASTSS wino43<>+32(SB), Y15 // 1/24
	XORQ AX, AX

filter43Loop:
	VMOVUPS (R10)(AX*1), Y0    // a
	VMOVUPS (R11)(AX*1), Y1    // b
	VMOVUPS (R12)(AX*1), Y2    // c
	VMULPS  Y11, Y0, Y3        // a·(1/4)
	VADDPS  Y2, Y0, Y4         // s = a + c
	VADDPS  Y1, Y4, Y5
	VMULPS  Y12, Y5, Y5        // (s + b)·(-1/6)
	VSUBPS  Y1, Y4, Y6
	VMULPS  Y12, Y6, Y6        // (s - b)·(-1/6)
	VMULPS  Y15, Y0, Y7        // a·(1/24)
	VFMADD231PS Y2, Y13, Y7    // p = a·(1/24) + c·(1/6)
	VMOVAPS Y7, Y8
	VFMADD231PS Y1, Y14, Y8    // p + b·(1/12)
	VFNMADD231PS Y1, Y14, Y7   // p - b·(1/12)
	VMOVUPS Y3, (DI)(AX*1)
	VMOVUPS Y5, (SI)(AX*1)
	VMOVUPS Y6, (DX)(AX*1)
	VMOVUPS Y8, (BX)(AX*1)
	VMOVUPS Y7, (R8)(AX*1)
	VMOVUPS Y2, (R9)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     filter43Loop
	VZEROUPPER
	RET

// func winogradColumns43AVX2(o *[6]*float32, row *float32, n int)
//
// B over the six columns 4t..4t+5 of each tile t of a row, 8 tiles at a time: the 32 elements from 4t
// transposed give columns 0..3 of the 8 tiles, the 32 from 4t+4 columns 4 and 5 (VPERM2F128 pairs the
// tiles 4 apart in one register, then VUNPCKLPS/VUNPCKHPS and VSHUFPS transpose each 128-bit lane's 4x4).
TEXT ·winogradColumns43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12 // 4
	VBROADCASTSS wino43<>+4(SB), Y13 // -5
	VBROADCASTSS wino43<>+8(SB), Y14 // 2
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), R8
	MOVQ 16(AX), R9
	MOVQ 24(AX), R10
	MOVQ 32(AX), R11
	MOVQ 40(AX), R13
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

columns43Loop:
	VMOVUPS 0(SI), Y0            // tiles t, t+1
	VMOVUPS 32(SI), Y1           // t+2, t+3
	VMOVUPS 64(SI), Y2           // t+4, t+5
	VMOVUPS 96(SI), Y3           // t+6, t+7
	VPERM2F128 $0x20, Y2, Y0, Y4 // t | t+4
	VPERM2F128 $0x20, Y3, Y1, Y5 // t+2 | t+6
	VPERM2F128 $0x31, Y2, Y0, Y6 // t+1 | t+5
	VPERM2F128 $0x31, Y3, Y1, Y7 // t+3 | t+7
	VUNPCKLPS Y6, Y4, Y0
	VUNPCKHPS Y6, Y4, Y1
	VUNPCKLPS Y7, Y5, Y2
	VUNPCKHPS Y7, Y5, Y3
	VSHUFPS $0x44, Y2, Y0, Y4    // column 0 of the 8 tiles
	VSHUFPS $0xEE, Y2, Y0, Y5    // column 1
	VSHUFPS $0x44, Y3, Y1, Y6    // column 2
	VSHUFPS $0xEE, Y3, Y1, Y7    // column 3
	VMOVUPS 16(SI), Y0
	VMOVUPS 48(SI), Y1
	VMOVUPS 80(SI), Y2
	VMOVUPS 112(SI), Y3
	VPERM2F128 $0x20, Y2, Y0, Y8
	VPERM2F128 $0x20, Y3, Y1, Y9
	VPERM2F128 $0x31, Y2, Y0, Y10
	VPERM2F128 $0x31, Y3, Y1, Y11
	VUNPCKLPS Y10, Y8, Y0
	VUNPCKLPS Y11, Y9, Y2
	VSHUFPS $0x44, Y2, Y0, Y8    // column 4
	VSHUFPS $0xEE, Y2, Y0, Y9    // column 5
	// Y4..Y9 are r0..r5 of WinogradInput43.
	VMOVAPS Y8, Y10
	VFMADD231PS Y4, Y12, Y10     // r4 + 4·r0
	VFMADD231PS Y6, Y13, Y10     // ... - 5·r2
	VADDPS  Y6, Y5, Y0           // r1 + r2
	VADDPS  Y8, Y7, Y1           // r3 + r4
	VFNMADD231PS Y0, Y12, Y1
	VSUBPS  Y6, Y5, Y0           // r1 - r2
	VSUBPS  Y7, Y8, Y2           // r4 - r3
	VFMADD231PS Y0, Y12, Y2
	VSUBPS  Y7, Y5, Y0           // r1 - r3
	VSUBPS  Y6, Y8, Y3           // r4 - r2
	VMOVAPS Y3, Y11
	VFNMADD231PS Y0, Y14, Y3
	VFMADD231PS Y0, Y14, Y11
	VFMADD231PS Y5, Y12, Y9      // r5 + 4·r1
	VFMADD231PS Y7, Y13, Y9      // ... - 5·r3
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y1, (R8)(AX*1)
	VMOVUPS Y2, (R9)(AX*1)
	VMOVUPS Y3, (R10)(AX*1)
	VMOVUPS Y11, (R11)(AX*1)
	VMOVUPS Y9, (R13)(AX*1)
	ADDQ    $128, SI
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     columns43Loop
	VZEROUPPER
	RET

// func winogradOutputInterleave43AVX2(out *float32, m *[6]*float32, n int)
//
// Aᵀ m as winogradOutput43AVX2, the four results of each index i stored together at out[4i..4i+3]: the
// transpose of winogradColumns43AVX2's first half.
TEXT ·winogradOutputInterleave43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12  // 4
	VBROADCASTSS wino43<>+8(SB), Y14  // 2
	VBROADCASTSS wino43<>+12(SB), Y15 // 8
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
	VADDPS  Y2, Y1, Y6         // s12
	VSUBPS  Y2, Y1, Y7         // d12
	VADDPS  Y4, Y3, Y8         // s34
	VSUBPS  Y4, Y3, Y9         // d34
	VADDPS  Y6, Y0, Y10
	VADDPS  Y8, Y10, Y10       // o0
	VMOVAPS Y7, Y11
	VFMADD231PS Y9, Y14, Y11   // o1
	VFMADD231PS Y8, Y12, Y6    // o2
	VADDPS  Y5, Y7, Y7
	VFMADD231PS Y9, Y15, Y7    // o3
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
	ADDQ    $128, DI
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     interleave43Loop
	VZEROUPPER
	RET

// func winogradOutputGrad43AVX2(o *[6]*float32, t *[4]*float32, n int)
//
// A t, the adjoint of the output transform of F(4x4, 3x3), of the 4-vectors (a, b, c, d) at each index:
// o0 = a, o1 = (a + c) + (b + d), o2 = (a + c) - (b + d), o3 = (a + 4c) + 2·(b + 4d),
// o4 = (a + 4c) - 2·(b + 4d), o5 = d.
TEXT ·winogradOutputGrad43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12 // 4
	VBROADCASTSS wino43<>+8(SB), Y14 // 2
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), SI
	MOVQ 16(AX), DX
	MOVQ 24(AX), BX
	MOVQ 32(AX), R8
	MOVQ 40(AX), R9
	MOVQ t+8(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	MOVQ n+16(FP), CX
	XORQ AX, AX

outputGrad43Loop:
	VMOVUPS (R10)(AX*1), Y0
	VMOVUPS (R11)(AX*1), Y1
	VMOVUPS (R12)(AX*1), Y2
	VMOVUPS (R13)(AX*1), Y3
	VADDPS  Y2, Y0, Y4         // a + c
	VADDPS  Y3, Y1, Y5         // b + d
	VADDPS  Y5, Y4, Y6
	VSUBPS  Y5, Y4, Y7
	VMOVAPS Y0, Y8
	VFMADD231PS Y2, Y12, Y8    // a + 4c
	VMOVAPS Y1, Y9
	VFMADD231PS Y3, Y12, Y9    // b + 4d
	VMOVAPS Y8, Y10
	VFMADD231PS Y9, Y14, Y8    // (a + 4c) + 2·(b + 4d)
	VFNMADD231PS Y9, Y14, Y10  // (a + 4c) - 2·(b + 4d)
	VMOVUPS Y0, (DI)(AX*1)
	VMOVUPS Y6, (SI)(AX*1)
	VMOVUPS Y7, (DX)(AX*1)
	VMOVUPS Y8, (BX)(AX*1)
	VMOVUPS Y10, (R8)(AX*1)
	VMOVUPS Y3, (R9)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     outputGrad43Loop
	VZEROUPPER
	RET

// func winogradGradColumns43AVX2(o *[6]*float32, row *float32, n int)
//
// winogradOutputGrad43AVX2 of the 4-vectors row[4t .. 4t+3] of n tiles t, 8 at a time: the first half of
// winogradColumns43AVX2's transpose.
TEXT ·winogradGradColumns43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+0(SB), Y12 // 4
	VBROADCASTSS wino43<>+8(SB), Y14 // 2
	MOVQ o+0(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), R8
	MOVQ 16(AX), R9
	MOVQ 24(AX), R10
	MOVQ 32(AX), R11
	MOVQ 40(AX), R13
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

gradColumns43Loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VPERM2F128 $0x20, Y2, Y0, Y4
	VPERM2F128 $0x20, Y3, Y1, Y5
	VPERM2F128 $0x31, Y2, Y0, Y6
	VPERM2F128 $0x31, Y3, Y1, Y7
	VUNPCKLPS Y6, Y4, Y0
	VUNPCKHPS Y6, Y4, Y1
	VUNPCKLPS Y7, Y5, Y2
	VUNPCKHPS Y7, Y5, Y3
	VSHUFPS $0x44, Y2, Y0, Y4    // a: column 0 of the 8 tiles
	VSHUFPS $0xEE, Y2, Y0, Y5    // b
	VSHUFPS $0x44, Y3, Y1, Y6    // c
	VSHUFPS $0xEE, Y3, Y1, Y7    // d
	VADDPS  Y6, Y4, Y0           // a + c
	VADDPS  Y7, Y5, Y1           // b + d
	VADDPS  Y1, Y0, Y2
	VSUBPS  Y1, Y0, Y3
	VMOVAPS Y4, Y8
	VFMADD231PS Y6, Y12, Y8      // a + 4c
	VMOVAPS Y5, Y9
	VFMADD231PS Y7, Y12, Y9      // b + 4d
	VMOVAPS Y8, Y10
	VFMADD231PS Y9, Y14, Y8
	VFNMADD231PS Y9, Y14, Y10
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y2, (R8)(AX*1)
	VMOVUPS Y3, (R9)(AX*1)
	VMOVUPS Y8, (R10)(AX*1)
	VMOVUPS Y10, (R11)(AX*1)
	VMOVUPS Y7, (R13)(AX*1)
	ADDQ    $128, SI
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     gradColumns43Loop
	VZEROUPPER
	RET

// func winogradFilterAdjoint43AVX2(o *[3]*float32, f *[6]*float32, n int)
//
// Gᵀ f, the adjoint of the filter transform of F(4x4, 3x3), of the 6-vectors f at each index:
// o0 = (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24), o1 = (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
// o2 = ((f3 + f4) - (f1 + f2))·(1/6) + f5.
TEXT ·winogradFilterAdjoint43AVX2(SB), NOSPLIT, $0-24
	VBROADCASTSS wino43<>+16(SB), Y11 // 1/4
	VBROADCASTSS wino43<>+24(SB), Y13 // 1/6
	VBROADCASTSS wino43<>+28(SB), Y14 // 1/12
	VBROADCASTSS wino43<>+32(SB), Y15 // 1/24
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
	VMULPS  Y11, Y0, Y8        // f0·(1/4)
	VFNMADD231PS Y6, Y13, Y8   // ... - (f1 + f2)·(1/6)
	VFMADD231PS Y7, Y15, Y8    // ... + (f3 + f4)·(1/24)
	VSUBPS  Y1, Y2, Y9         // f2 - f1
	VMULPS  Y13, Y9, Y9
	VSUBPS  Y4, Y3, Y10        // f3 - f4
	VFMADD231PS Y10, Y14, Y9   // (f2 - f1)·(1/6) + (f3 - f4)·(1/12)
	VSUBPS  Y6, Y7, Y10        // (f3 + f4) - (f1 + f2)
	VFMADD231PS Y10, Y13, Y5   // f5 + ...·(1/6)
	VMOVUPS Y8, (DI)(AX*1)
	VMOVUPS Y9, (SI)(AX*1)
	VMOVUPS Y5, (DX)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     filterAdjoint43Loop
	VZEROUPPER
	RET
