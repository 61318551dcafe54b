//go:build amd64 && !purego

#include "textflag.h"

// Every kernel takes lengths that are multiples of 8 (one YMM register of float32), checked by its Go wrapper
// in kernels_amd64.go, and loops over 8 elements at a time; the reductions keep two accumulators so that
// consecutive additions do not wait on each other.

// func sumAVX2(x *float32, n int) float32
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ   CX, $16
	JL     sumOne

sumTwo:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	ADDQ   $64, SI
	SUBQ   $16, CX
	CMPQ   CX, $16
	JGE    sumTwo

sumOne:
	TESTQ  CX, CX
	JZ     sumDone
	VADDPS (SI), Y0, Y0

sumDone:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumSquaredDevAVX2(x *float32, n int, m float32) float32
TEXT ·sumSquaredDevAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y2
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	CMPQ         CX, $16
	JL           sqOne

sqTwo:
	VSUBPS      (SI), Y2, Y3         // m - x: squared like x - m
	VSUBPS      32(SI), Y2, Y4
	VFMADD231PS Y3, Y3, Y0
	VFMADD231PS Y4, Y4, Y1
	ADDQ        $64, SI
	SUBQ        $16, CX
	CMPQ        CX, $16
	JGE         sqTwo

sqOne:
	TESTQ       CX, CX
	JZ          sqDone
	VSUBPS      (SI), Y2, Y3
	VFMADD231PS Y3, Y3, Y0

sqDone:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func affineAVX2(y, x *float32, n int, a, b float32, relu bool)
//
// y = a x + b, then max(y, 0) when relu: VMAXPS returns its second operand y when y is NaN, and adding +0
// turns a -0 into +0, as Go's max does.
TEXT ·affineAVX2(SB), NOSPLIT, $0-33
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS a+24(FP), Y2
	VBROADCASTSS b+28(FP), Y3
	VXORPS       Y4, Y4, Y4
	MOVBLZX      relu+32(FP), AX
	TESTQ        CX, CX
	JZ           affineDone
	TESTQ        AX, AX
	JNZ          affineReLU

affinePlain:
	VMOVUPS     (SI), Y0
	VFMADD213PS Y3, Y2, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         affinePlain
	JMP         affineDone

affineReLU:
	VMOVUPS     (SI), Y0
	VFMADD213PS Y3, Y2, Y0
	VMAXPS      Y0, Y4, Y0
	VADDPS      Y4, Y0, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         affineReLU

affineDone:
	VZEROUPPER
	RET

// func keepWherePositiveAVX2(out, y, dy *float32, n int)
//
// out = dy where y != 0, else 0 (y is a ReLU output: +0 or positive, or NaN, which keeps dy).
TEXT ·keepWherePositiveAVX2(SB), NOSPLIT, $0-32
	MOVQ   out+0(FP), DI
	MOVQ   y+8(FP), SI
	MOVQ   dy+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPS Y4, Y4, Y4
	TESTQ  CX, CX
	JZ     keepDone

keepLoop:
	VCMPPS  $0x04, (SI), Y4, Y1     // y != 0 (unordered: true for NaN)
	VANDPS  (DX), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     keepLoop

keepDone:
	VZEROUPPER
	RET

// func sumAndDotAVX2(grad, x *float32, n int, m float32) (sumG, sumGX float32)
//
// Σ grad and Σ grad (x - m).
TEXT ·sumAndDotAVX2(SB), NOSPLIT, $0-40
	MOVQ         grad+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Y2
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	TESTQ        CX, CX
	JZ           dotDone

dotLoop:
	VMOVUPS     (DI), Y3
	VADDPS      Y3, Y0, Y0
	VMOVUPS     (SI), Y4
	VSUBPS      Y2, Y4, Y4          // x - m
	VFMADD231PS Y4, Y3, Y1
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         dotLoop

dotDone:
	VEXTRACTF128 $1, Y0, X3
	VADDPS       X3, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, sumG+32(FP)
	VEXTRACTF128 $1, Y1, X3
	VADDPS       X3, X1, X1
	VHADDPS      X1, X1, X1
	VHADDPS      X1, X1, X1
	VMOVSS       X1, sumGX+36(FP)
	VZEROUPPER
	RET

// func affine2AVX2(d, grad, x *float32, n int, a, b, k float32)
//
// d = a grad + b x + k.
TEXT ·affine2AVX2(SB), NOSPLIT, $0-44
	MOVQ         d+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS a+32(FP), Y2
	VBROADCASTSS b+36(FP), Y3
	VBROADCASTSS k+40(FP), Y4
	TESTQ        CX, CX
	JZ           affine2Done

affine2Loop:
	VMOVUPS     (SI), Y0
	VFMADD213PS Y4, Y2, Y0          // a g + k
	VMOVUPS     (DX), Y1
	VFMADD231PS Y3, Y1, Y0          // + b x
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         affine2Loop

affine2Done:
	VZEROUPPER
	RET

// func addToAVX2(d, s *float32, n int)
//
// d += s.
TEXT ·addToAVX2(SB), NOSPLIT, $0-24
	MOVQ  d+0(FP), DI
	MOVQ  s+8(FP), SI
	MOVQ  n+16(FP), CX
	TESTQ CX, CX
	JZ    addDone

addLoop:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     addLoop

addDone:
	VZEROUPPER
	RET
