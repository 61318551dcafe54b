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
