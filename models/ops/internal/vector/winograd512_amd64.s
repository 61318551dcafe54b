//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 versions of the F(2x2, 3x3) input transform's passes of winograd_amd64.s, for the same lengths
// (multiples of 8): 16 elements or tiles at a time, then a last 8 with the AVX2 versions' instructions.
// AVX-512 F only.

// func winogradRowsAVX512(a, b, c, e, r0, r1, r2, r3 *float32, n int)
TEXT ·winogradRowsAVX512(SB), NOSPLIT, $0-72
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

rows16:
	CMPQ    CX, $16
	JL      rows8
	VMOVUPS (R11)(AX*1), Z0
	VMOVUPS (R12)(AX*1), Z1
	VMOVUPS (R13)(AX*1), Z2
	VMOVUPS (R14)(AX*1), Z3
	VSUBPS  Z2, Z0, Z4      // r0 - r2
	VADDPS  Z2, Z1, Z5      // r1 + r2
	VSUBPS  Z1, Z2, Z6      // r2 - r1
	VSUBPS  Z3, Z1, Z7      // r1 - r3
	VMOVUPS Z4, (DI)(AX*1)
	VMOVUPS Z5, (R8)(AX*1)
	VMOVUPS Z6, (R9)(AX*1)
	VMOVUPS Z7, (R10)(AX*1)
	ADDQ    $64, AX
	SUBQ    $16, CX
	JMP     rows16

rows8:
	TESTQ   CX, CX
	JZ      rowsDone
	VMOVUPS (R11)(AX*1), Y0
	VMOVUPS (R12)(AX*1), Y1
	VMOVUPS (R13)(AX*1), Y2
	VMOVUPS (R14)(AX*1), Y3
	VSUBPS  Y2, Y0, Y4
	VADDPS  Y2, Y1, Y5
	VSUBPS  Y1, Y2, Y6
	VSUBPS  Y3, Y1, Y7
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y5, (R8)(AX*1)
	VMOVUPS Y6, (R9)(AX*1)
	VMOVUPS Y7, (R10)(AX*1)

rowsDone:
	VZEROUPPER
	RET

// The lanes of the even and of the odd elements of two ZMM registers, the indices of VPERMI2PS.
DATA evenLanes<>+0(SB)/4, $0
DATA evenLanes<>+4(SB)/4, $2
DATA evenLanes<>+8(SB)/4, $4
DATA evenLanes<>+12(SB)/4, $6
DATA evenLanes<>+16(SB)/4, $8
DATA evenLanes<>+20(SB)/4, $10
DATA evenLanes<>+24(SB)/4, $12
DATA evenLanes<>+28(SB)/4, $14
DATA evenLanes<>+32(SB)/4, $16
DATA evenLanes<>+36(SB)/4, $18
DATA evenLanes<>+40(SB)/4, $20
DATA evenLanes<>+44(SB)/4, $22
DATA evenLanes<>+48(SB)/4, $24
DATA evenLanes<>+52(SB)/4, $26
DATA evenLanes<>+56(SB)/4, $28
DATA evenLanes<>+60(SB)/4, $30
GLOBL evenLanes<>(SB), RODATA|NOPTR, $64

DATA oddLanes<>+0(SB)/4, $1
DATA oddLanes<>+4(SB)/4, $3
DATA oddLanes<>+8(SB)/4, $5
DATA oddLanes<>+12(SB)/4, $7
DATA oddLanes<>+16(SB)/4, $9
DATA oddLanes<>+20(SB)/4, $11
DATA oddLanes<>+24(SB)/4, $13
DATA oddLanes<>+28(SB)/4, $15
DATA oddLanes<>+32(SB)/4, $17
DATA oddLanes<>+36(SB)/4, $19
DATA oddLanes<>+40(SB)/4, $21
DATA oddLanes<>+44(SB)/4, $23
DATA oddLanes<>+48(SB)/4, $25
DATA oddLanes<>+52(SB)/4, $27
DATA oddLanes<>+56(SB)/4, $29
DATA oddLanes<>+60(SB)/4, $31
GLOBL oddLanes<>(SB), RODATA|NOPTR, $64

// func winogradColumnsAVX512(o0, o1, o2, o3, row *float32, n int)
//
// 16 tiles at a time: the even elements E = row[2t] and odd ones O = row[2t+1] of row[2t .. 2t+31], and E2,
// O2 of row[2t+2 .. 2t+33], each gathered from two loads by one VPERMI2PS (which overwrites its index
// register, so the indices are copied first).
TEXT ·winogradColumnsAVX512(SB), NOSPLIT, $0-48
	MOVQ    o0+0(FP), DI
	MOVQ    o1+8(FP), R8
	MOVQ    o2+16(FP), R9
	MOVQ    o3+24(FP), R10
	MOVQ    row+32(FP), SI
	MOVQ    n+40(FP), CX
	XORQ    AX, AX
	VMOVUPS evenLanes<>(SB), Z14
	VMOVUPS oddLanes<>(SB), Z15

cols16:
	CMPQ      CX, $16
	JL        cols8
	VMOVUPS   (SI), Z0          // row[2t .. 2t+15]
	VMOVUPS   64(SI), Z1        // row[2t+16 .. 2t+31]
	VMOVUPS   8(SI), Z2         // row[2t+2 .. 2t+17]
	VMOVUPS   72(SI), Z3        // row[2t+18 .. 2t+33]
	VMOVAPS   Z14, Z4
	VPERMI2PS Z1, Z0, Z4        // E
	VMOVAPS   Z15, Z5
	VPERMI2PS Z1, Z0, Z5        // O
	VMOVAPS   Z14, Z6
	VPERMI2PS Z3, Z2, Z6        // E2
	VMOVAPS   Z15, Z7
	VPERMI2PS Z3, Z2, Z7        // O2
	VSUBPS    Z6, Z4, Z8
	VADDPS    Z6, Z5, Z9
	VSUBPS    Z5, Z6, Z10
	VSUBPS    Z7, Z5, Z11
	VMOVUPS   Z8, (DI)(AX*1)
	VMOVUPS   Z9, (R8)(AX*1)
	VMOVUPS   Z10, (R9)(AX*1)
	VMOVUPS   Z11, (R10)(AX*1)
	ADDQ      $128, SI
	ADDQ      $64, AX
	SUBQ      $16, CX
	JMP       cols16

cols8:
	TESTQ   CX, CX
	JZ      colsDone
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

colsDone:
	VZEROUPPER
	RET
