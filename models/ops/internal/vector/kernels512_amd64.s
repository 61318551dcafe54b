//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 versions of the kernels of kernels_amd64.s but KeepWherePositive (whose AVX-512 version, a
// zero-masking load, measured no faster on Zen 4), for the same lengths (multiples of 8): they loop over
// 16 elements (one ZMM register of float32) at a time and do a last 8 with the YMM instructions of the
// AVX2 versions. They use AVX-512 F only (VPXORD, not VXORPS, which needs DQ; VEXTRACTF64X4, not
// VEXTRACTF32X8). A VEX-encoded instruction that writes a YMM register clears the upper half of its ZMM
// register, so the reductions fold their ZMM accumulators to YMM before the last 8.

// func sumAVX512(x *float32, n int) float32
TEXT ·sumAVX512(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	CMPQ   CX, $32
	JL     sum16

sum32:
	VADDPS (SI), Z0, Z0
	VADDPS 64(SI), Z1, Z1
	ADDQ   $128, SI
	SUBQ   $32, CX
	CMPQ   CX, $32
	JGE    sum32

sum16:
	CMPQ   CX, $16
	JL     sumFold
	VADDPS (SI), Z0, Z0
	ADDQ   $64, SI
	SUBQ   $16, CX

sumFold:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	TESTQ         CX, CX
	JZ            sumDone
	VADDPS        (SI), Y0, Y0

sumDone:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumSquaredDevAVX512(x *float32, n int, m float32) float32
TEXT ·sumSquaredDevAVX512(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Z2
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	CMPQ         CX, $32
	JL           sq16

sq32:
	VSUBPS      (SI), Z2, Z3         // m - x: squared like x - m
	VSUBPS      64(SI), Z2, Z4
	VFMADD231PS Z3, Z3, Z0
	VFMADD231PS Z4, Z4, Z1
	ADDQ        $128, SI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         sq32

sq16:
	CMPQ        CX, $16
	JL          sqFold
	VSUBPS      (SI), Z2, Z3
	VFMADD231PS Z3, Z3, Z0
	ADDQ        $64, SI
	SUBQ        $16, CX

sqFold:
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	TESTQ         CX, CX
	JZ            sqDone
	VSUBPS        (SI), Y2, Y3
	VFMADD231PS   Y3, Y3, Y0

sqDone:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func affineAVX512(y, x *float32, n int, a, b float32, relu bool)
//
// As affineAVX2: VMAXPS returns its second operand y when y is NaN, and adding +0 turns a -0 into +0.
TEXT ·affineAVX512(SB), NOSPLIT, $0-33
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS a+24(FP), Z2
	VBROADCASTSS b+28(FP), Z3
	VPXORD       Z4, Z4, Z4
	MOVBLZX      relu+32(FP), AX
	MOVQ         CX, BX
	SHRQ         $4, BX              // blocks of 16
	TESTQ        AX, AX
	JNZ          affineReLU
	TESTQ        BX, BX
	JZ           affinePlain8

affinePlain16:
	VMOVUPS     (SI), Z0
	VFMADD213PS Z3, Z2, Z0
	VMOVUPS     Z0, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        BX
	JNZ         affinePlain16

affinePlain8:
	TESTQ       $8, CX
	JZ          affineDone
	VMOVUPS     (SI), Y0
	VFMADD213PS Y3, Y2, Y0
	VMOVUPS     Y0, (DI)
	JMP         affineDone

affineReLU:
	TESTQ       BX, BX
	JZ          affineReLU8

affineReLU16:
	VMOVUPS     (SI), Z0
	VFMADD213PS Z3, Z2, Z0
	VMAXPS      Z0, Z4, Z0
	VADDPS      Z4, Z0, Z0
	VMOVUPS     Z0, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        BX
	JNZ         affineReLU16

affineReLU8:
	TESTQ       $8, CX
	JZ          affineDone
	VMOVUPS     (SI), Y0
	VFMADD213PS Y3, Y2, Y0
	VMAXPS      Y0, Y4, Y0
	VADDPS      Y4, Y0, Y0
	VMOVUPS     Y0, (DI)

affineDone:
	VZEROUPPER
	RET

// func sumAndDotAVX512(grad, x *float32, n int, m float32) (sumG, sumGX float32)
TEXT ·sumAndDotAVX512(SB), NOSPLIT, $0-40
	MOVQ         grad+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Z2
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1

dot16:
	CMPQ        CX, $16
	JL          dotFold
	VMOVUPS     (DI), Z3
	VADDPS      Z3, Z0, Z0
	VMOVUPS     (SI), Z4
	VSUBPS      Z2, Z4, Z4          // x - m
	VFMADD231PS Z4, Z3, Z1
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         dot16

dotFold:
	VEXTRACTF64X4 $1, Z0, Y3
	VADDPS        Y3, Y0, Y0
	VEXTRACTF64X4 $1, Z1, Y3
	VADDPS        Y3, Y1, Y1
	TESTQ         CX, CX
	JZ            dotDone
	VMOVUPS       (DI), Y3
	VADDPS        Y3, Y0, Y0
	VMOVUPS       (SI), Y4
	VSUBPS        Y2, Y4, Y4
	VFMADD231PS   Y4, Y3, Y1

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

// func affine2AVX512(d, grad, x *float32, n int, a, b, k float32)
//
// d = a grad + b x + k.
TEXT ·affine2AVX512(SB), NOSPLIT, $0-44
	MOVQ         d+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS a+32(FP), Z2
	VBROADCASTSS b+36(FP), Z3
	VBROADCASTSS k+40(FP), Z4

	MOVQ        CX, BX
	SHRQ        $4, BX              // blocks of 16
	JZ          affine2x8

affine2x16:
	VMOVUPS     (SI), Z0
	VFMADD213PS Z4, Z2, Z0          // a g + k
	VMOVUPS     (DX), Z1
	VFMADD231PS Z3, Z1, Z0          // + b x
	VMOVUPS     Z0, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DX
	ADDQ        $64, DI
	DECQ        BX
	JNZ         affine2x16

affine2x8:
	TESTQ       $8, CX
	JZ          affine2Done
	VMOVUPS     (SI), Y0
	VFMADD213PS Y4, Y2, Y0
	VMOVUPS     (DX), Y1
	VFMADD231PS Y3, Y1, Y0
	VMOVUPS     Y0, (DI)

affine2Done:
	VZEROUPPER
	RET

// func addToAVX512(d, s *float32, n int)
//
// d += s.
TEXT ·addToAVX512(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX

	MOVQ        CX, BX
	SHRQ        $4, BX              // blocks of 16
	JZ          add8

add16:
	VMOVUPS (DI), Z0
	VADDPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ        BX
	JNZ         add16

add8:
	TESTQ       $8, CX
	JZ      addDone
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)

addDone:
	VZEROUPPER
	RET
