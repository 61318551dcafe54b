//go:build amd64 && !purego

#include "textflag.h"

// func geluAVX512(y, d, x *float32, n int, consts *GELUConstants)
//
// geluAVX2 (gelu_amd64.s) eight elements per iteration, in the eight float64 lanes of a ZMM register: the
// same operations in the same order, each constant broadcast from the first lane of its entry in consts
// ({1to8}), the comparisons into mask registers and the limits chosen by masked moves and VBLENDMPD. n is
// a positive multiple of 8. AVX-512 F only (VPANDQ, VPXORQ, VPORQ rather than the DQ forms of ANDPD,
// XORPD, ORPD).
TEXT ·geluAVX512(SB), NOSPLIT, $0-40
	MOVQ   y+0(FP), DI
	MOVQ   d+8(FP), SI
	MOVQ   x+16(FP), DX
	MOVQ   n+24(FP), CX
	MOVQ   consts+32(FP), R8
	VPXORQ Z15, Z15, Z15

loop:
	VCVTPS2PD      (DX), Z0                 // x
	VPANDQ.BCST    0(R8), Z0, Z1            // |x|
	VCMPPD.BCST    $0x05, 736(R8), Z1, K1   // tail: !(|x| < 30), also for NaN
	VMULPD.BCST    64(R8), Z1, Z1           // u
	VMULPD         Z1, Z1, Z2
	VPXORQ.BCST    32(R8), Z2, Z2           // a = -u^2

	// e = exp(a): kr = a log2e + 1.5 2^52 holds k in its low bits, r = a - k ln2.
	VBROADCASTSD       128(R8), Z3
	VFMADD231PD.BCST   96(R8), Z2, Z3       // kr
	VSUBPD.BCST        128(R8), Z3, Z4      // k
	VFNMADD231PD.BCST  160(R8), Z4, Z2      // r
	VBROADCASTSD       192(R8), Z4          // Taylor series of exp(r), degree 8
	VFMADD213PD.BCST   224(R8), Z2, Z4
	VFMADD213PD.BCST   256(R8), Z2, Z4
	VFMADD213PD.BCST   288(R8), Z2, Z4
	VFMADD213PD.BCST   320(R8), Z2, Z4
	VFMADD213PD.BCST   352(R8), Z2, Z4
	VFMADD213PD.BCST   384(R8), Z2, Z4
	VFMADD213PD.BCST   416(R8), Z2, Z4
	VFMADD213PD.BCST   416(R8), Z2, Z4      // exp(r)
	VPSUBQ.BCST        448(R8), Z3, Z3      // k + 1023
	VPSLLQ             $52, Z3, Z3          // 2^k
	VMULPD             Z3, Z4, Z4           // e

	// half = e t P(t) / 2, t = 1/(1 + p u)
	VBROADCASTSD     416(R8), Z5
	VFMADD231PD.BCST 480(R8), Z1, Z5
	VBROADCASTSD     416(R8), Z6
	VDIVPD           Z5, Z6, Z5             // t
	VBROADCASTSD     512(R8), Z6            // c5
	VFMADD213PD.BCST 544(R8), Z5, Z6
	VFMADD213PD.BCST 576(R8), Z5, Z6
	VFMADD213PD.BCST 608(R8), Z5, Z6
	VFMADD213PD.BCST 640(R8), Z5, Z6
	VFMADD213PD.BCST 672(R8), Z5, Z6        // P(t)
	VMULPD           Z5, Z6, Z6             // erfc(u) exp(u^2)
	VMULPD           Z4, Z6, Z6             // erfc(u)
	VMULPD.BCST      384(R8), Z6, Z6        // half

	// cdf, y and d
	VBROADCASTSD     384(R8), Z7
	VSUBPD           Z6, Z7, Z7             // 0.5 - half, not negative
	VPANDQ.BCST      32(R8), Z0, Z8
	VPORQ            Z8, Z7, Z7             // copysign(0.5 - half, x)
	VADDPD.BCST      384(R8), Z7, Z7        // cdf
	VMULPD           Z7, Z0, Z9             // y
	VMULPD.BCST      704(R8), Z0, Z10
	VFMADD213PD      Z7, Z4, Z10            // d

	// limits where !(|x| < 30)
	VCMPPD       $0x1e, Z15, Z0, K2         // x > 0
	VCMPPD       $0x03, Z0, Z0, K3          // x is NaN
	KORW         K3, K2, K4
	VMOVAPD.Z    Z0, K4, Z13                // x, or +0 for x < 0
	VBLENDMPD    Z13, Z9, K1, Z9
	VBROADCASTSD 416(R8), Z14
	VMOVAPD.Z    Z14, K2, Z11               // 1 for x > 0, else 0
	VMOVAPD      Z0, K3, Z11                // NaN for NaN
	VBLENDMPD    Z11, Z10, K1, Z10

	VCVTPD2PS Z9, Y9
	VMOVUPS   Y9, (DI)
	TESTQ     SI, SI
	JZ        next
	VCVTPD2PS Z10, Y10
	VMOVUPS   Y10, (SI)
	ADDQ      $32, SI

next:
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  loop
	VZEROUPPER
	RET
