//go:build amd64 && !purego

#include "textflag.h"

// KEY maps the float32 bits in r to integers with the same order, in place (t is scratch): r ^= (r >> 31) &
// 0x7fffffff, arithmetic shift; Y15 holds 0x7fffffff. The map is its own inverse.
#define KEY(r, t) VPSRAD $31, r, t; VPAND Y15, t, t; VPXOR t, r, r
#define KEYX(r, t) VPSRAD $31, r, t; VPAND X15, t, t; VPXOR t, r, r

// FOUR pools the four windows at SI, DX into DI, AX as the eight-window loop does, in XMM registers (where
// SHUFPS keeps the windows in order). It changes no pointer.
#define FOUR \
	VMOVUPS    (SI), X0; \
	VMOVUPS    16(SI), X1; \
	VSHUFPS    $0x88, X1, X0, X2; \
	VSHUFPS    $0xDD, X1, X0, X3; \
	VMOVUPS    (DX), X0; \
	VMOVUPS    16(DX), X1; \
	VSHUFPS    $0x88, X1, X0, X4; \
	VSHUFPS    $0xDD, X1, X0, X5; \
	KEYX(X2, X6); \
	KEYX(X3, X6); \
	KEYX(X4, X6); \
	KEYX(X5, X6); \
	VPCMPGTD   X2, X3, X6; \
	VPCMPGTD   X4, X5, X7; \
	VPMAXSD    X2, X3, X2; \
	VPMAXSD    X4, X5, X4; \
	VPCMPGTD   X2, X4, X8; \
	VPMAXSD    X2, X4, X2; \
	KEYX(X2, X9); \
	VPSUBD     X6, X12, X6; \
	VPSUBD     X7, X13, X7; \
	VPBLENDVB  X8, X7, X6, X6; \
	VMOVUPS    X2, (DI); \
	VPACKUSDW  X6, X6, X6; \
	VPACKUSWB  X6, X6, X6; \
	VMOVD      X6, (AX)

// func maxPoolRowPairAVX2(y *float32, argmax *uint8, top, bottom *float32, n int)
//
// Eight windows at a time, then four, then the last four again if n is not a multiple of four (n >= 4). A
// window's even and odd columns are split with SHUFPS (in YMM registers this orders the windows 0 1 4 5 | 2 3
// 6 7, undone with VPERMQ before storing). Y2-Y5 hold the keys of the window positions 0-3; Y6 = (k1 > k0),
// Y7 = (k3 > k2), Y8 = (max(k2,k3) > max(k0,k1)) as all-ones masks; the position is -Y6 or 2-Y7, chosen by
// Y8, which keeps the first maximum on ties. Y12 = 0, Y13 = 2 in every dword.
TEXT ·maxPoolRowPairAVX2(SB), NOSPLIT, $0-40
	MOVQ      y+0(FP), DI
	MOVQ      argmax+8(FP), AX
	MOVQ      top+16(FP), SI
	MOVQ      bottom+24(FP), DX
	MOVQ      n+32(FP), CX
	VPCMPEQD  Y15, Y15, Y15
	VPSRLD    $1, Y15, Y15
	VPXOR     Y12, Y12, Y12
	VPCMPEQD  Y13, Y13, Y13
	VPSRLD    $31, Y13, Y13
	VPADDD    Y13, Y13, Y13

poolEight:
	CMPQ         CX, $8
	JLT          poolFour
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VSHUFPS      $0x88, Y1, Y0, Y2
	VSHUFPS      $0xDD, Y1, Y0, Y3
	VMOVUPS      (DX), Y0
	VMOVUPS      32(DX), Y1
	VSHUFPS      $0x88, Y1, Y0, Y4
	VSHUFPS      $0xDD, Y1, Y0, Y5
	KEY(Y2, Y6)
	KEY(Y3, Y6)
	KEY(Y4, Y6)
	KEY(Y5, Y6)
	VPCMPGTD     Y2, Y3, Y6
	VPCMPGTD     Y4, Y5, Y7
	VPMAXSD      Y2, Y3, Y2
	VPMAXSD      Y4, Y5, Y4
	VPCMPGTD     Y2, Y4, Y8
	VPMAXSD      Y2, Y4, Y2
	KEY(Y2, Y9)
	VPSUBD       Y6, Y12, Y6
	VPSUBD       Y7, Y13, Y7
	VPBLENDVB    Y8, Y7, Y6, Y6
	VPERMQ       $0xD8, Y2, Y2
	VPERMQ       $0xD8, Y6, Y6
	VMOVUPS      Y2, (DI)
	VPACKUSDW    Y6, Y6, Y6
	VPACKUSWB    Y6, Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VPUNPCKLDQ   X7, X6, X6
	VMOVQ        X6, (AX)
	ADDQ         $64, SI
	ADDQ         $64, DX
	ADDQ         $32, DI
	ADDQ         $8, AX
	SUBQ         $8, CX
	JMP          poolEight

poolFour:
	CMPQ CX, $4
	JLT  poolLast
	FOUR
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $16, DI
	ADDQ $4, AX
	SUBQ $4, CX

poolLast:
	TESTQ CX, CX
	JZ    poolDone
	MOVQ  $4, BX
	SUBQ  CX, BX
	MOVQ  BX, R8
	SHLQ  $3, R8
	SUBQ  R8, SI
	SUBQ  R8, DX
	SHRQ  $1, R8
	SUBQ  R8, DI
	SUBQ  BX, AX
	FOUR

poolDone:
	VZEROUPPER
	RET

// SPREAD writes the gradients of four windows (XMM) or eight (YMM, suffix Y) from DX, AX to the rows at SI
// and DI: the window positions' values are dy masked by argmax == 0..3 (X10-X13 hold 0-3 in every dword),
// then interleaved, positions 0 and 1 into the top row, 2 and 3 into the bottom row. In YMM registers
// UNPCKLPS and UNPCKHPS interleave within 128-bit lanes, so VPERM2F128 puts the halves back in order.
#define SPREAD \
	VPMOVZXBD  (AX), X0; \
	VMOVUPS    (DX), X1; \
	VPCMPEQD   X0, X10, X2; \
	VANDPS     X1, X2, X2; \
	VPCMPEQD   X0, X11, X3; \
	VANDPS     X1, X3, X3; \
	VPCMPEQD   X0, X12, X4; \
	VANDPS     X1, X4, X4; \
	VPCMPEQD   X0, X13, X5; \
	VANDPS     X1, X5, X5; \
	VUNPCKLPS  X3, X2, X6; \
	VUNPCKHPS  X3, X2, X7; \
	VMOVUPS    X6, (SI); \
	VMOVUPS    X7, 16(SI); \
	VUNPCKLPS  X5, X4, X6; \
	VUNPCKHPS  X5, X4, X7; \
	VMOVUPS    X6, (DI); \
	VMOVUPS    X7, 16(DI)

#define SPREADY \
	VPMOVZXBD  (AX), Y0; \
	VMOVUPS    (DX), Y1; \
	VPCMPEQD   Y0, Y10, Y2; \
	VANDPS     Y1, Y2, Y2; \
	VPCMPEQD   Y0, Y11, Y3; \
	VANDPS     Y1, Y3, Y3; \
	VPCMPEQD   Y0, Y12, Y4; \
	VANDPS     Y1, Y4, Y4; \
	VPCMPEQD   Y0, Y13, Y5; \
	VANDPS     Y1, Y5, Y5; \
	VUNPCKLPS  Y3, Y2, Y6; \
	VUNPCKHPS  Y3, Y2, Y7; \
	VPERM2F128 $0x20, Y7, Y6, Y8; \
	VPERM2F128 $0x31, Y7, Y6, Y9; \
	VMOVUPS    Y8, (SI); \
	VMOVUPS    Y9, 32(SI); \
	VUNPCKLPS  Y5, Y4, Y6; \
	VUNPCKHPS  Y5, Y4, Y7; \
	VPERM2F128 $0x20, Y7, Y6, Y8; \
	VPERM2F128 $0x31, Y7, Y6, Y9; \
	VMOVUPS    Y8, (DI); \
	VMOVUPS    Y9, 32(DI)

// func maxPoolGradRowPairAVX2(top, bottom, dy *float32, argmax *uint8, n int)
//
// Eight windows at a time, then four, then the last four again if n is not a multiple of four (n >= 4).
TEXT ·maxPoolGradRowPairAVX2(SB), NOSPLIT, $0-40
	MOVQ     top+0(FP), SI
	MOVQ     bottom+8(FP), DI
	MOVQ     dy+16(FP), DX
	MOVQ     argmax+24(FP), AX
	MOVQ     n+32(FP), CX
	VPXOR    Y10, Y10, Y10
	VPCMPEQD Y11, Y11, Y11
	VPSRLD   $31, Y11, Y11
	VPADDD   Y11, Y11, Y12
	VPADDD   Y11, Y12, Y13

gradEight:
	CMPQ CX, $8
	JLT  gradFour
	SPREADY
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $32, DX
	ADDQ $8, AX
	SUBQ $8, CX
	JMP  gradEight

gradFour:
	CMPQ CX, $4
	JLT  gradLast
	SPREAD
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $16, DX
	ADDQ $4, AX
	SUBQ $4, CX

gradLast:
	TESTQ CX, CX
	JZ    gradDone
	MOVQ  $4, BX
	SUBQ  CX, BX
	MOVQ  BX, R8
	SHLQ  $3, R8
	SUBQ  R8, SI
	SUBQ  R8, DI
	SHRQ  $1, R8
	SUBQ  R8, DX
	SUBQ  BX, AX
	SPREAD

gradDone:
	VZEROUPPER
	RET

// evenColumns holds 0, 2, ..., 14: the first columns of eight consecutive stride-2 windows.
DATA evenColumns<>+0(SB)/4, $0
DATA evenColumns<>+4(SB)/4, $2
DATA evenColumns<>+8(SB)/4, $4
DATA evenColumns<>+12(SB)/4, $6
DATA evenColumns<>+16(SB)/4, $8
DATA evenColumns<>+20(SB)/4, $10
DATA evenColumns<>+24(SB)/4, $12
DATA evenColumns<>+28(SB)/4, $14
GLOBL evenColumns<>(SB), RODATA|NOPTR, $32

// WINDOWS3 pools the eight windows at SI into keys at DI and columns at AX; Y7 holds their first columns
// (in order). The window positions' values are the even and odd columns of SI[0:16] and the even columns of
// SI[2:18], split with SHUFPS (windows in the order 0 1 4 5 | 2 3 6 7 until VPERMQ). Y5 becomes the
// position of the first maximum: 1 where p1 > p0, then 2 where p2 is above both.
#define WINDOWS3 \
	VMOVUPS   (SI), Y0; \
	VMOVUPS   32(SI), Y1; \
	VSHUFPS   $0x88, Y1, Y0, Y2; \
	VSHUFPS   $0xDD, Y1, Y0, Y3; \
	VMOVUPS   8(SI), Y0; \
	VMOVUPS   40(SI), Y1; \
	VSHUFPS   $0x88, Y1, Y0, Y4; \
	KEY(Y2, Y6); \
	KEY(Y3, Y6); \
	KEY(Y4, Y6); \
	VPCMPGTD  Y2, Y3, Y5; \
	VPMAXSD   Y2, Y3, Y2; \
	VPCMPGTD  Y2, Y4, Y6; \
	VPMAXSD   Y2, Y4, Y2; \
	VPSUBD    Y5, Y12, Y5; \
	VPBLENDVB Y6, Y13, Y5, Y5; \
	VPERMQ    $0xD8, Y2, Y2; \
	VPERMQ    $0xD8, Y5, Y5; \
	VPADDD    Y7, Y5, Y5; \
	VMOVDQU   Y2, (DI); \
	VMOVDQU   Y5, (AX)

// func maxPoolWindows3s2AVX2(keys, at *int32, row *float32, n int, col0 int32)
//
// Eight windows at a time; if n is not a multiple of eight, the last eight again (n >= 8). Y12 = 0, Y13 = 2,
// Y14 = 16 in every dword, Y15 = 0x7fffffff for KEY.
TEXT ·maxPoolWindows3s2AVX2(SB), NOSPLIT, $0-36
	MOVQ         keys+0(FP), DI
	MOVQ         at+8(FP), AX
	MOVQ         row+16(FP), SI
	MOVQ         n+24(FP), CX
	MOVL         col0+32(FP), BX
	VMOVD        BX, X7
	VPBROADCASTD X7, Y7
	VPADDD       evenColumns<>(SB), Y7, Y7
	VPCMPEQD     Y15, Y15, Y15
	VPSRLD       $1, Y15, Y15
	VPXOR        Y12, Y12, Y12
	VPCMPEQD     Y13, Y13, Y13
	VPSRLD       $31, Y13, Y13
	VPSLLD       $4, Y13, Y14
	VPADDD       Y13, Y13, Y13

windowsEight:
	CMPQ   CX, $8
	JLT    windowsLast
	WINDOWS3
	ADDQ   $64, SI
	ADDQ   $32, DI
	ADDQ   $32, AX
	VPADDD Y14, Y7, Y7
	SUBQ   $8, CX
	JMP    windowsEight

windowsLast:
	TESTQ        CX, CX
	JZ           windowsDone
	MOVQ         $8, BX
	SUBQ         CX, BX
	MOVQ         BX, R8
	SHLQ         $2, R8
	SUBQ         R8, DI
	SUBQ         R8, AX
	SHLQ         $1, R8
	SUBQ         R8, SI
	SHLQ         $1, BX
	VMOVQ        BX, X0
	VPBROADCASTD X0, Y0
	VPSUBD       Y0, Y7, Y7
	WINDOWS3

windowsDone:
	VZEROUPPER
	RET

// func keepFirstMaxAVX2(best, at, keys, keyAt *int32, n int)
//
// Eight at a time; if n is not a multiple of eight, the last eight again (n >= 8; merging twice changes
// nothing: a key equal to best is not above it).
TEXT ·keepFirstMaxAVX2(SB), NOSPLIT, $0-40
	MOVQ best+0(FP), DI
	MOVQ at+8(FP), AX
	MOVQ keys+16(FP), SI
	MOVQ keyAt+24(FP), DX
	MOVQ n+32(FP), CX

mergeEight:
	CMPQ      CX, $8
	JLT       mergeLast
	VMOVDQU   (DI), Y0
	VMOVDQU   (SI), Y1
	VPCMPGTD  Y0, Y1, Y2
	VPMAXSD   Y0, Y1, Y0
	VMOVDQU   Y0, (DI)
	VMOVDQU   (AX), Y3
	VPBLENDVB Y2, (DX), Y3, Y3
	VMOVDQU   Y3, (AX)
	ADDQ      $32, DI
	ADDQ      $32, AX
	ADDQ      $32, SI
	ADDQ      $32, DX
	SUBQ      $8, CX
	JMP       mergeEight

mergeLast:
	TESTQ     CX, CX
	JZ        mergeDone
	MOVQ      $8, BX
	SUBQ      CX, BX
	SHLQ      $2, BX
	SUBQ      BX, DI
	SUBQ      BX, AX
	SUBQ      BX, SI
	SUBQ      BX, DX
	MOVQ      $8, CX
	JMP       mergeEight

mergeDone:
	VZEROUPPER
	RET
