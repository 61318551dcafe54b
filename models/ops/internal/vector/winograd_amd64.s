//go:build amd64 && !purego

#include "textflag.h"

// func winogradRowsAVX2(a, b, c, e, r0, r1, r2, r3 *float32, n int)
//
// a = r0 - r2, b = r1 + r2, c = r2 - r1, e = r1 - r3, 8 elements at a time.
TEXT ·winogradRowsAVX2(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), R8
	MOVQ c+16(FP), R9
	MOVQ e+24(FP), R10
	MOVQ r0+32(FP), R11
	MOVQ r1+40(FP), R12
	MOVQ r2+48(FP), R13
	MOVQ r3+56(FP), R14
	MOVQ n+64(FP), CX
	XORQ AX, AX

rowsLoop:
	VMOVUPS (R11)(AX*1), Y0
	VMOVUPS (R12)(AX*1), Y1
	VMOVUPS (R13)(AX*1), Y2
	VMOVUPS (R14)(AX*1), Y3
	VSUBPS  Y2, Y0, Y4      // r0 - r2
	VADDPS  Y2, Y1, Y5      // r1 + r2
	VSUBPS  Y1, Y2, Y6      // r2 - r1
	VSUBPS  Y3, Y1, Y7      // r1 - r3
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y5, (R8)(AX*1)
	VMOVUPS Y6, (R9)(AX*1)
	VMOVUPS Y7, (R10)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     rowsLoop
	VZEROUPPER
	RET

// func winogradColumnsAVX2(o0, o1, o2, o3, row *float32, n int)
//
// For 8 tiles at a time, the even and odd elements of row from tile t's first column (E = row[2t],
// O = row[2t+1]) and from two further (E2 = row[2t+2], O2 = row[2t+3]): VSHUFPS gathers them within each
// 128-bit lane and VPERMPD puts the lanes' halves in order. Then o0 = E - E2, o1 = O + E2, o2 = E2 - O,
// o3 = O - O2.
TEXT ·winogradColumnsAVX2(SB), NOSPLIT, $0-48
	MOVQ o0+0(FP), DI
	MOVQ o1+8(FP), R8
	MOVQ o2+16(FP), R9
	MOVQ o3+24(FP), R10
	MOVQ row+32(FP), SI
	MOVQ n+40(FP), CX
	XORQ AX, AX

colsLoop:
	VMOVUPS (SI), Y0            // row[2t .. 2t+7]
	VMOVUPS 32(SI), Y1          // row[2t+8 .. 2t+15]
	VMOVUPS 8(SI), Y2           // row[2t+2 .. 2t+9]
	VMOVUPS 40(SI), Y3          // row[2t+10 .. 2t+17]
	VSHUFPS $0x88, Y1, Y0, Y4
	VSHUFPS $0xDD, Y1, Y0, Y5
	VSHUFPS $0x88, Y3, Y2, Y6
	VSHUFPS $0xDD, Y3, Y2, Y7
	VPERMPD $0xD8, Y4, Y4       // E
	VPERMPD $0xD8, Y5, Y5       // O
	VPERMPD $0xD8, Y6, Y6       // E2
	VPERMPD $0xD8, Y7, Y7       // O2
	VSUBPS  Y6, Y4, Y8
	VADDPS  Y6, Y5, Y9
	VSUBPS  Y5, Y6, Y10
	VSUBPS  Y7, Y5, Y11
	VMOVUPS Y8, (DI)(AX*1)
	VMOVUPS Y9, (R8)(AX*1)
	VMOVUPS Y10, (R9)(AX*1)
	VMOVUPS Y11, (R10)(AX*1)
	ADDQ    $64, SI
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     colsLoop
	VZEROUPPER
	RET

// Column j of Aᵀ M for the points at offset AX of the rows SI, R10, R11, R12: s = M0j + M1j + M2j,
// t = M1j - M2j - M3j, with Y0..Y2 as scratch.
#define OUTCOL(s, t) \
	VMOVUPS (SI)(AX*1), s \
	VMOVUPS (R10)(AX*1), Y0 \
	VMOVUPS (R11)(AX*1), Y1 \
	VMOVUPS (R12)(AX*1), Y2 \
	VADDPS  Y0, s, s \
	VADDPS  Y1, s, s \
	VSUBPS  Y1, Y0, t \
	VSUBPS  Y2, t, t

// Row (s0, s1, s2, s3) of Aᵀ M times A, (s0+s1+s2, s1-s2-s3), interleaved tile by tile and stored at dst:
// VUNPCKLPS/VUNPCKHPS interleave within 128-bit lanes, VPERM2F128 puts the lanes in order.
#define OUTROW(s0, s1, s2, s3, dst) \
	VADDPS     s1, s0, Y0 \
	VADDPS     s2, Y0, Y0 \
	VSUBPS     s2, s1, Y1 \
	VSUBPS     s3, Y1, Y1 \
	VUNPCKLPS  Y1, Y0, Y2 \
	VUNPCKHPS  Y1, Y0, Y3 \
	VPERM2F128 $0x20, Y3, Y2, Y0 \
	VPERM2F128 $0x31, Y3, Y2, Y1 \
	VMOVUPS    Y0, (dst) \
	VMOVUPS    Y1, 32(dst)

// func winogradOutputAVX2(even, odd, m *float32, stride, n int)
//
// For 8 tiles at a time, with point ξ of tile t at m[ξ·stride + t] (row-major 4x4), the column sums of
// Aᵀ M, s_j = M0j + M1j + M2j and t_j = M1j - M2j - M3j (Y8..Y11 and Y12..Y15), then each of these two rows
// times A, (s0+s1+s2, s1-s2-s3), interleaved tile by tile into even and (from t) odd.
TEXT ·winogradOutputAVX2(SB), NOSPLIT, $0-40
	MOVQ even+0(FP), DI
	MOVQ odd+8(FP), R8
	MOVQ m+16(FP), SI
	MOVQ stride+24(FP), DX
	MOVQ n+32(FP), CX
	SHLQ $2, DX               // stride in bytes
	LEAQ (DX)(DX*2), R9       // 3·stride
	LEAQ (SI)(DX*4), R10      // row 1 of the points
	LEAQ (R10)(DX*4), R11     // row 2
	LEAQ (R11)(DX*4), R12     // row 3
	XORQ AX, AX

outLoop:
	OUTCOL(Y8, Y12)
	ADDQ    DX, AX
	OUTCOL(Y9, Y13)
	ADDQ    DX, AX
	OUTCOL(Y10, Y14)
	ADDQ    DX, AX
	OUTCOL(Y11, Y15)
	SUBQ    R9, AX
	OUTROW(Y8, Y9, Y10, Y11, DI)
	OUTROW(Y12, Y13, Y14, Y15, R8)
	ADDQ    $64, DI
	ADDQ    $64, R8
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     outLoop
	VZEROUPPER
	RET

// func winogradOutputGradAVX2(m *float32, stride int, even, odd *float32, n int)
//
// For 8 tiles at a time, the 2x2 tiles (a b / c d) of dy, (a, b) interleaved in even and (c, d) in odd,
// deinterleaved as in winogradColumnsAVX2 (Y0 = a, Y1 = b, Y2 = c, Y3 = d). A t has the rows (a, b),
// (a+c, b+d), (a-c, b-d) and (-c, -d); each row (x, y) times Aᵀ gives the points (x, x+y, x-y, -y), stored
// to m[ξ·stride + t].
TEXT ·winogradOutputGradAVX2(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), DI
	MOVQ stride+8(FP), DX
	MOVQ even+16(FP), SI
	MOVQ odd+24(FP), R8
	MOVQ n+32(FP), CX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R9
	LEAQ (DI)(DX*4), R10
	LEAQ (R10)(DX*4), R11
	LEAQ (R11)(DX*4), R12
	VXORPS Y15, Y15, Y15

gradLoop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS (R8), Y6
	VMOVUPS 32(R8), Y7
	VSHUFPS $0x88, Y5, Y4, Y0
	VSHUFPS $0xDD, Y5, Y4, Y1
	VSHUFPS $0x88, Y7, Y6, Y2
	VSHUFPS $0xDD, Y7, Y6, Y3
	VPERMPD $0xD8, Y0, Y0       // a
	VPERMPD $0xD8, Y1, Y1       // b
	VPERMPD $0xD8, Y2, Y2       // c
	VPERMPD $0xD8, Y3, Y3       // d
	// row 0: (a, b)
	VADDPS  Y1, Y0, Y4
	VSUBPS  Y1, Y0, Y5
	VSUBPS  Y1, Y15, Y6
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, (DI)(DX*1)
	VMOVUPS Y5, (DI)(DX*2)
	VMOVUPS Y6, (DI)(R9*1)
	// row 1: (a+c, b+d)
	VADDPS  Y2, Y0, Y8
	VADDPS  Y3, Y1, Y9
	VADDPS  Y9, Y8, Y4
	VSUBPS  Y9, Y8, Y5
	VSUBPS  Y9, Y15, Y6
	VMOVUPS Y8, (R10)
	VMOVUPS Y4, (R10)(DX*1)
	VMOVUPS Y5, (R10)(DX*2)
	VMOVUPS Y6, (R10)(R9*1)
	// row 2: (a-c, b-d)
	VSUBPS  Y2, Y0, Y8
	VSUBPS  Y3, Y1, Y9
	VADDPS  Y9, Y8, Y4
	VSUBPS  Y9, Y8, Y5
	VSUBPS  Y9, Y15, Y6
	VMOVUPS Y8, (R11)
	VMOVUPS Y4, (R11)(DX*1)
	VMOVUPS Y5, (R11)(DX*2)
	VMOVUPS Y6, (R11)(R9*1)
	// row 3: (-c, -d)
	VSUBPS  Y2, Y15, Y8
	VSUBPS  Y3, Y15, Y9
	VADDPS  Y9, Y8, Y4
	VSUBPS  Y9, Y8, Y5
	VMOVUPS Y8, (R12)
	VMOVUPS Y4, (R12)(DX*1)
	VMOVUPS Y5, (R12)(DX*2)
	VMOVUPS Y3, (R12)(R9*1)
	ADDQ    $64, SI
	ADDQ    $64, R8
	ADDQ    $32, DI
	ADDQ    $32, R10
	ADDQ    $32, R11
	ADDQ    $32, R12
	SUBQ    $8, CX
	JNZ     gradLoop
	VZEROUPPER
	RET

// Gathers element e (0..8) of 8 filters 9 elements apart into Y<dst>, from the 8 filters at SI: Y14 holds the
// offsets 0, 9, ..., 63, and the mask Y13 is all ones before the gather, which clears it.
#define GATHER(e, dst) \
	VPCMPEQD   Y13, Y13, Y13 \
	VGATHERDPS Y13, (e*4)(SI)(Y14*4), dst

// Stores the points (a, (a+b+c)/2, (a-b+c)/2, c) of the row (a, b, c) of G f to u + offsets[k..k+3], using
// Y9 (one half), Y10 and Y11.
#define ROW(a, b, c, k) \
	VADDPS  b, a, Y10 \
	VSUBPS  b, a, Y11 \
	VADDPS  c, Y10, Y10 \
	VADDPS  c, Y11, Y11 \
	VMULPS  Y9, Y10, Y10 \
	VMULPS  Y9, Y11, Y11 \
	MOVQ    (k*8)(R8), R9 \
	VMOVUPS a, (DI)(R9*1) \
	MOVQ    (k*8+8)(R8), R9 \
	VMOVUPS Y10, (DI)(R9*1) \
	MOVQ    (k*8+16)(R8), R9 \
	VMOVUPS Y11, (DI)(R9*1) \
	MOVQ    (k*8+24)(R8), R9 \
	VMOVUPS c, (DI)(R9*1)

// func winogradFiltersAVX2(u *float32, offsets *[16]int, w *float32, index *[8]int32, n int)
//
// G f Gᵀ of 8 filters f (9 elements each, row-major) at a time, in the same order of operations as the Go
// code: the rows of G f are (f0 f1 f2), ((f0+f3+f6)/2 ...), ((f0-f3+f6)/2 ...) and (f6 f7 f8).
TEXT ·winogradFiltersAVX2(SB), NOSPLIT, $0-40
	MOVQ u+0(FP), DI
	MOVQ offsets+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ index+24(FP), AX
	MOVQ n+32(FP), CX
	VMOVDQU (AX), Y14
	MOVL    $0x3f000000, AX     // 0.5
	MOVQ    AX, X9
	VBROADCASTSS X9, Y9

filtLoop:
	GATHER(0, Y0)
	GATHER(1, Y1)
	GATHER(2, Y2)
	GATHER(3, Y3)
	GATHER(4, Y4)
	GATHER(5, Y5)
	GATHER(6, Y6)
	GATHER(7, Y7)
	GATHER(8, Y8)
	ROW(Y0, Y1, Y2, 0)
	ROW(Y6, Y7, Y8, 12)
	VADDPS  Y3, Y0, Y12   // column 0: (f0+f3+f6)/2 and (f0-f3+f6)/2
	VSUBPS  Y3, Y0, Y15
	VADDPS  Y6, Y12, Y12
	VADDPS  Y6, Y15, Y15
	VMULPS  Y9, Y12, Y12
	VMULPS  Y9, Y15, Y15
	VADDPS  Y4, Y1, Y0    // column 1
	VSUBPS  Y4, Y1, Y3
	VADDPS  Y7, Y0, Y0
	VADDPS  Y7, Y3, Y3
	VMULPS  Y9, Y0, Y0
	VMULPS  Y9, Y3, Y3
	VADDPS  Y5, Y2, Y1    // column 2
	VSUBPS  Y5, Y2, Y4
	VADDPS  Y8, Y1, Y1
	VADDPS  Y8, Y4, Y4
	VMULPS  Y9, Y1, Y1
	VMULPS  Y9, Y4, Y4
	ROW(Y12, Y0, Y1, 4)
	ROW(Y15, Y3, Y4, 8)
	ADDQ    $288, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     filtLoop
	VZEROUPPER
	RET

// Column j of Gᵀ f: from the points a = (0,j) at SI+off, b at R10+off, c at R11+off and e at R12+off,
// g0 = a + (b+c)/2, g1 = (b-c)/2, g2 = (b+c)/2 + e.
#define ADJCOL(off, g0, g1, g2) \
	VMOVUPS off(R10), Y12 \
	VMOVUPS off(R11), Y13 \
	VADDPS  Y13, Y12, Y14 \
	VSUBPS  Y13, Y12, Y12 \
	VMULPS  Y15, Y14, Y14 \
	VMULPS  Y15, Y12, g1 \
	VADDPS  off(SI), Y14, g0 \
	VADDPS  off(R12), Y14, g2

// Row (a, b, c, e) of Gᵀ f times G: stores a + (b+c)/2, (b-c)/2, (b+c)/2 + e at R15, R15+R13, R15+2·R13 and
// advances R15 by 3·R13.
#define ADJROW(a, b, c, e) \
	VADDPS  c, b, Y12 \
	VSUBPS  c, b, Y13 \
	VMULPS  Y15, Y12, Y12 \
	VMULPS  Y15, Y13, Y13 \
	VADDPS  Y12, a, Y14 \
	VMOVUPS Y14, (R15) \
	ADDQ    R13, R15 \
	VMOVUPS Y13, (R15) \
	ADDQ    R13, R15 \
	VADDPS  e, Y12, Y14 \
	VMOVUPS Y14, (R15) \
	ADDQ    R13, R15

// func winogradFilterAdjointAVX2(d *float32, f *float32, stride, n int)
//
// Gᵀ f G of 8 point sets at a time, in the same order of operations as the Go code: point ξ of set k at
// f[ξ·stride + k], element e of the 3x3 result to d[e·n + k].
TEXT ·winogradFilterAdjointAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ f+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ n+24(FP), CX
	SHLQ $2, DX
	MOVQ CX, R13
	SHLQ $2, R13                // n in bytes
	LEAQ (SI)(DX*4), R10
	LEAQ (R10)(DX*4), R11
	LEAQ (R11)(DX*4), R12
	MOVL $0x3f000000, AX        // 0.5
	MOVQ AX, X15
	VBROADCASTSS X15, Y15

adjLoop:
	ADJCOL(0, Y0, Y4, Y8)
	ADDQ DX, SI
	ADDQ DX, R10
	ADDQ DX, R11
	ADDQ DX, R12
	ADJCOL(0, Y1, Y5, Y9)
	ADDQ DX, SI
	ADDQ DX, R10
	ADDQ DX, R11
	ADDQ DX, R12
	ADJCOL(0, Y2, Y6, Y10)
	ADDQ DX, SI
	ADDQ DX, R10
	ADDQ DX, R11
	ADDQ DX, R12
	ADJCOL(0, Y3, Y7, Y11)
	LEAQ (DX)(DX*2), AX
	SUBQ AX, SI
	SUBQ AX, R10
	SUBQ AX, R11
	SUBQ AX, R12
	MOVQ DI, R15
	ADJROW(Y0, Y1, Y2, Y3)
	ADJROW(Y4, Y5, Y6, Y7)
	ADJROW(Y8, Y9, Y10, Y11)
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  adjLoop
	VZEROUPPER
	RET
