//go:build amd64 && !purego

#include "textflag.h"

// func geluAVX2(y, d, x *float32, n int, consts *GELUConstants)
//
// Four elements per iteration, in float64, as package models/ops computes them in geluScalar (gelu.go):
//
//	u = |x|/sqrt2, e = exp(-u^2) = 2^k exp(r), t = 1/(1 + p u), half = e t P(t) / 2,
//	cdf = 0.5 + copysign(0.5 - half, x), y = x cdf, d = cdf + x e / sqrt(2 pi),
//
// then y and d are replaced by their limits where !(|x| < 30): x or +0 and 1 or 0, NaN for NaN.
// Constants are read from consts at the offsets listed in models/ops geluVectorConsts.
TEXT ·geluAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ d+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ consts+32(FP), R8
	VXORPD Y15, Y15, Y15

loop:
	VCVTPS2PD (DX), Y0              // x
	VANDPD    0(R8), Y0, Y1         // |x|
	VCMPPD    $0x05, 736(R8), Y1, Y14 // tail: !(|x| < 30), also for NaN
	VMULPD    64(R8), Y1, Y1        // u
	VMULPD    Y1, Y1, Y2
	VXORPD    32(R8), Y2, Y2        // a = -u^2

	// e = exp(a): kr = a log2e + 1.5 2^52 holds k in its low bits, r = a - k ln2.
	VMOVUPD      128(R8), Y3
	VFMADD231PD  96(R8), Y2, Y3     // kr
	VSUBPD       128(R8), Y3, Y4    // k
	VFNMADD231PD 160(R8), Y4, Y2    // r
	VMOVUPD      192(R8), Y4        // Taylor series of exp(r), degree 8
	VFMADD213PD  224(R8), Y2, Y4
	VFMADD213PD  256(R8), Y2, Y4
	VFMADD213PD  288(R8), Y2, Y4
	VFMADD213PD  320(R8), Y2, Y4
	VFMADD213PD  352(R8), Y2, Y4
	VFMADD213PD  384(R8), Y2, Y4
	VFMADD213PD  416(R8), Y2, Y4
	VFMADD213PD  416(R8), Y2, Y4    // exp(r)
	VPSUBQ       448(R8), Y3, Y3    // k + 1023
	VPSLLQ       $52, Y3, Y3        // 2^k
	VMULPD       Y3, Y4, Y4         // e

	// half = e t P(t) / 2, t = 1/(1 + p u)
	VMOVUPD     416(R8), Y5
	VFMADD231PD 480(R8), Y1, Y5
	VMOVUPD     416(R8), Y6
	VDIVPD      Y5, Y6, Y5          // t
	VMOVUPD     512(R8), Y6         // c5
	VFMADD213PD 544(R8), Y5, Y6
	VFMADD213PD 576(R8), Y5, Y6
	VFMADD213PD 608(R8), Y5, Y6
	VFMADD213PD 640(R8), Y5, Y6
	VFMADD213PD 672(R8), Y5, Y6     // P(t)
	VMULPD      Y5, Y6, Y6          // erfc(u) exp(u^2)
	VMULPD      Y4, Y6, Y6          // erfc(u)
	VMULPD      384(R8), Y6, Y6     // half

	// cdf, y and d
	VMOVUPD     384(R8), Y7
	VSUBPD      Y6, Y7, Y7          // 0.5 - half, not negative
	VANDPD      32(R8), Y0, Y8
	VORPD       Y8, Y7, Y7          // copysign(0.5 - half, x)
	VADDPD      384(R8), Y7, Y7     // cdf
	VMULPD      Y7, Y0, Y9          // y
	VMULPD      704(R8), Y0, Y10
	VFMADD213PD Y7, Y4, Y10         // d

	// limits where !(|x| < 30)
	VCMPPD    $0x1e, Y15, Y0, Y11   // x > 0
	VCMPPD    $0x03, Y0, Y0, Y12    // x is NaN
	VORPD     Y12, Y11, Y13
	VANDPD    Y0, Y13, Y13          // x, or +0 for x < 0
	VBLENDVPD Y14, Y13, Y9, Y9
	VANDPD    416(R8), Y11, Y11
	VANDPD    Y0, Y12, Y12
	VORPD     Y12, Y11, Y11         // 1, 0 or NaN
	VBLENDVPD Y14, Y11, Y10, Y10

	VCVTPD2PSY Y9, X9
	VMOVUPS    X9, (DI)
	TESTQ      SI, SI
	JZ         next
	VCVTPD2PSY Y10, X10
	VMOVUPS    X10, (SI)
	ADDQ       $16, SI

next:
	ADDQ $16, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JNZ  loop
	VZEROUPPER
	RET
