//go:build amd64 && !purego

#include "textflag.h"

// The packed-gemm micro-kernel (see gemm.go) and the CPU feature queries that
// decide whether it may run.

// ADDROW adds the 24 values at (base) to the accumulators x, y, z; STOREROW
// writes x, y, z to the 24 values at (DI).
#define ADDROW(base, x, y, z) VADDPD (base), x, x; VADDPD 64(base), y, y; VADDPD 128(base), z, z
#define STOREROW(x, y, z) VMOVUPD x, (DI); VMOVUPD y, 64(DI); VMOVUPD z, 128(DI)

// func kernel4x24(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool)
TEXT ·kernel4x24(SB), NOSPLIT, $0-57
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $3, R9
	MOVQ ps+24(FP), R11
	SHLQ $3, R11
	LEAQ (SI)(R9*2), R10
	MOVQ b+32(FP), DX
	MOVQ c+40(FP), DI
	MOVQ ldc+48(FP), R8
	SHLQ $3, R8
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	TESTQ CX, CX
	JEQ   store

loop:
	VMOVUPD      (DX), Z0
	VMOVUPD      64(DX), Z1
	VMOVUPD      128(DX), Z2
	VBROADCASTSD (SI), Z3
	VFMADD231PD  Z0, Z3, Z4
	VFMADD231PD  Z1, Z3, Z5
	VFMADD231PD  Z2, Z3, Z6
	VBROADCASTSD (SI)(R9*1), Z16
	VFMADD231PD  Z0, Z16, Z7
	VFMADD231PD  Z1, Z16, Z8
	VFMADD231PD  Z2, Z16, Z9
	VBROADCASTSD (R10), Z17
	VFMADD231PD  Z0, Z17, Z10
	VFMADD231PD  Z1, Z17, Z11
	VFMADD231PD  Z2, Z17, Z12
	VBROADCASTSD (R10)(R9*1), Z18
	VFMADD231PD  Z0, Z18, Z13
	VFMADD231PD  Z1, Z18, Z14
	VFMADD231PD  Z2, Z18, Z15
	ADDQ         R11, SI
	ADDQ         R11, R10
	ADDQ         $192, DX
	DECQ         CX
	JNE          loop

store:
	// With add set, the tile's current values join the accumulators (read
	// through R9, R9 being free after the loop); then the rows are written.
	CMPB add+56(FP), $0
	JEQ  set
	MOVQ DI, R9
	ADDROW(R9, Z4, Z5, Z6)
	ADDQ R8, R9
	ADDROW(R9, Z7, Z8, Z9)
	ADDQ R8, R9
	ADDROW(R9, Z10, Z11, Z12)
	ADDQ R8, R9
	ADDROW(R9, Z13, Z14, Z15)

set:
	STOREROW(Z4, Z5, Z6)
	ADDQ R8, DI
	STOREROW(Z7, Z8, Z9)
	ADDQ R8, DI
	STOREROW(Z10, Z11, Z12)
	ADDQ R8, DI
	STOREROW(Z13, Z14, Z15)
	VZEROUPPER
	RET

// ADDROW12 adds the 12 values at (base) to the accumulators x, y, z;
// STOREROW12 writes x, y, z to the 12 values at (DI).
#define ADDROW12(base, x, y, z) VADDPD (base), x, x; VADDPD 32(base), y, y; VADDPD 64(base), z, z
#define STOREROW12(x, y, z) VMOVUPD x, (DI); VMOVUPD y, 32(DI); VMOVUPD z, 64(DI)

// func kernel4x12(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool)
//
// kernel4x24's loop in AVX2: 4 rows × 12 columns in Y4–Y15, B's three
// vectors in Y0–Y2, A's broadcast in Y3; B's rows are 24 values (192 bytes)
// apart.
TEXT ·kernel4x12(SB), NOSPLIT, $0-57
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $3, R9
	MOVQ ps+24(FP), R11
	SHLQ $3, R11
	LEAQ (SI)(R9*2), R10
	MOVQ b+32(FP), DX
	MOVQ c+40(FP), DI
	MOVQ ldc+48(FP), R8
	SHLQ $3, R8
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VXORPD Y14, Y14, Y14
	VXORPD Y15, Y15, Y15
	TESTQ CX, CX
	JEQ   store12

loop12:
	VMOVUPD      (DX), Y0
	VMOVUPD      32(DX), Y1
	VMOVUPD      64(DX), Y2
	VBROADCASTSD (SI), Y3
	VFMADD231PD  Y0, Y3, Y4
	VFMADD231PD  Y1, Y3, Y5
	VFMADD231PD  Y2, Y3, Y6
	VBROADCASTSD (SI)(R9*1), Y3
	VFMADD231PD  Y0, Y3, Y7
	VFMADD231PD  Y1, Y3, Y8
	VFMADD231PD  Y2, Y3, Y9
	VBROADCASTSD (R10), Y3
	VFMADD231PD  Y0, Y3, Y10
	VFMADD231PD  Y1, Y3, Y11
	VFMADD231PD  Y2, Y3, Y12
	VBROADCASTSD (R10)(R9*1), Y3
	VFMADD231PD  Y0, Y3, Y13
	VFMADD231PD  Y1, Y3, Y14
	VFMADD231PD  Y2, Y3, Y15
	ADDQ         R11, SI
	ADDQ         R11, R10
	ADDQ         $192, DX
	DECQ         CX
	JNE          loop12

store12:
	CMPB add+56(FP), $0
	JEQ  set12
	MOVQ DI, R9
	ADDROW12(R9, Y4, Y5, Y6)
	ADDQ R8, R9
	ADDROW12(R9, Y7, Y8, Y9)
	ADDQ R8, R9
	ADDROW12(R9, Y10, Y11, Y12)
	ADDQ R8, R9
	ADDROW12(R9, Y13, Y14, Y15)

set12:
	STOREROW12(Y4, Y5, Y6)
	ADDQ R8, DI
	STOREROW12(Y7, Y8, Y9)
	ADDQ R8, DI
	STOREROW12(Y10, Y11, Y12)
	ADDQ R8, DI
	STOREROW12(Y13, Y14, Y15)
	VZEROUPPER
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// Vectorised logistic and hyperbolic tangent for the GRU gates. Both use
// exp(x) = 2^k·e^r with k = round(x/ln 2) (the 1.5·2^52 shifter trick) and
// |r| ≤ ln2/2, e^r by its Taylor polynomial of degree 13 (truncation error
// below 1e-17) and 2^k built in the exponent bits. x is clamped to (NaN passes through)
// [−708, 709], where σ and tanh are at ±1, or within 1.2e-308 of 0.

#define LOG2E 1.4426950408889634073599246810018920
#define LN2U 0.69314718055966295651160180568695068359375
#define LN2L 0.28235290563031577122588448175013436025525412068e-12
#define SHIFTER 6755399441055744.0

DATA gateexp<>+0(SB)/8, $LOG2E
DATA gateexp<>+8(SB)/8, $SHIFTER
DATA gateexp<>+16(SB)/8, $LN2U
DATA gateexp<>+24(SB)/8, $LN2L
DATA gateexp<>+32(SB)/8, $-708.0
DATA gateexp<>+40(SB)/8, $709.0
DATA gateexp<>+48(SB)/8, $1.0
DATA gateexp<>+56(SB)/8, $2.0
DATA gateexp<>+64(SB)/8, $1023
DATA gateexp<>+72(SB)/8, $1.6059043836821614599e-10  // 1/13!
DATA gateexp<>+80(SB)/8, $2.0876756987868098979e-9   // 1/12!
DATA gateexp<>+88(SB)/8, $2.5052108385441718775e-8   // 1/11!
DATA gateexp<>+96(SB)/8, $2.7557319223985890653e-7   // 1/10!
DATA gateexp<>+104(SB)/8, $2.7557319223985890653e-6  // 1/9!
DATA gateexp<>+112(SB)/8, $2.4801587301587301587e-5  // 1/8!
DATA gateexp<>+120(SB)/8, $1.9841269841269841270e-4  // 1/7!
DATA gateexp<>+128(SB)/8, $1.3888888888888888889e-3  // 1/6!
DATA gateexp<>+136(SB)/8, $8.3333333333333333333e-3  // 1/5!
DATA gateexp<>+144(SB)/8, $4.1666666666666666667e-2  // 1/4!
DATA gateexp<>+152(SB)/8, $1.6666666666666666667e-1  // 1/3!
DATA gateexp<>+160(SB)/8, $0.5                       // 1/2!
GLOBL gateexp<>(SB), RODATA|NOPTR, $168

// LOADCONST fills Z16…Z24 with the constants above.
#define LOADCONST \
	VBROADCASTSD gateexp<>+0(SB), Z16  \
	VBROADCASTSD gateexp<>+8(SB), Z17  \
	VBROADCASTSD gateexp<>+16(SB), Z18 \
	VBROADCASTSD gateexp<>+24(SB), Z19 \
	VBROADCASTSD gateexp<>+32(SB), Z20 \
	VBROADCASTSD gateexp<>+40(SB), Z21 \
	VBROADCASTSD gateexp<>+48(SB), Z22 \
	VBROADCASTSD gateexp<>+56(SB), Z23 \
	VPBROADCASTQ gateexp<>+64(SB), Z24

// EXPZ0 replaces Z0 by exp(Z0), using Z1…Z3.
#define EXPZ0 \
	VMAXPD       Z0, Z20, Z0                    \
	VMINPD       Z0, Z21, Z0                    \
	VMOVAPD      Z17, Z1                        \
	VFMADD231PD  Z16, Z0, Z1                    \
	VSUBPD       Z17, Z1, Z2                    \
	VFNMADD231PD Z18, Z2, Z0                    \
	VFNMADD231PD Z19, Z2, Z0                    \
	VBROADCASTSD gateexp<>+72(SB), Z3           \
	VFMADD213PD.BCST gateexp<>+80(SB), Z0, Z3  \
	VFMADD213PD.BCST gateexp<>+88(SB), Z0, Z3  \
	VFMADD213PD.BCST gateexp<>+96(SB), Z0, Z3  \
	VFMADD213PD.BCST gateexp<>+104(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+112(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+120(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+128(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+136(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+144(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+152(SB), Z0, Z3 \
	VFMADD213PD.BCST gateexp<>+160(SB), Z0, Z3 \
	VFMADD213PD      Z22, Z0, Z3                \
	VFMADD213PD      Z22, Z0, Z3                \
	VPADDQ       Z24, Z1, Z1                    \
	VPSLLQ       $52, Z1, Z1                    \
	VMULPD       Z1, Z3, Z0

// func sigmoidVec(x *float64, n int)
// x[i] = 1/(1+exp(−x[i])) for i < n; n is a multiple of 8.
TEXT ·sigmoidVec(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JEQ  sdone
	LOADCONST
	VPXORQ Z9, Z9, Z9

sloop:
	VMOVUPD (SI), Z0
	VSUBPD  Z0, Z9, Z0
	EXPZ0
	VADDPD  Z22, Z0, Z0
	VDIVPD  Z0, Z22, Z0
	VMOVUPD Z0, (SI)
	ADDQ    $64, SI
	DECQ    CX
	JNE     sloop

sdone:
	VZEROUPPER
	RET

// func tanhVec(x *float64, n int)
// x[i] = 1 − 2/(1+exp(2·x[i])) for i < n; n is a multiple of 8.
TEXT ·tanhVec(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JEQ  tdone
	LOADCONST

tloop:
	VMOVUPD (SI), Z0
	VADDPD  Z0, Z0, Z0
	EXPZ0
	VADDPD  Z22, Z0, Z0
	VDIVPD  Z0, Z23, Z0
	VSUBPD  Z0, Z22, Z0
	VMOVUPD Z0, (SI)
	ADDQ    $64, SI
	DECQ    CX
	JNE     tloop

tdone:
	VZEROUPPER
	RET

// func reluVec(x *float64, n int)
// x[i] = max(x[i], 0) for i < n, n a multiple of 8, with Go's max semantics:
// NaN stays NaN and −0 becomes +0 (x is kept where !(x ≤ 0)).
TEXT ·reluVec(SB), NOSPLIT, $0-16
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $3, CX
	JEQ    rdone
	VPXORQ Z1, Z1, Z1

rloop:
	VMOVUPD   (SI), Z0
	VCMPPD    $6, Z1, Z0, K1 // NLE_US: x > 0 or unordered
	VMOVUPD.Z Z0, K1, Z0
	VMOVUPD   Z0, (SI)
	ADDQ      $64, SI
	DECQ      CX
	JNE       rloop

rdone:
	VZEROUPPER
	RET

// func reluBackVec(dz, dy, y *float64, n int)
// dz[i] = dy[i] where y[i] ≠ 0 (or NaN), else 0, for i < n, n a multiple of 8.
TEXT ·reluBackVec(SB), NOSPLIT, $0-32
	MOVQ   dz+0(FP), DI
	MOVQ   dy+8(FP), SI
	MOVQ   y+16(FP), DX
	MOVQ   n+24(FP), CX
	SHRQ   $3, CX
	JEQ    bdone
	VPXORQ Z1, Z1, Z1

bloop:
	VMOVUPD   (DX), Z0
	VCMPPD    $4, Z1, Z0, K1 // NEQ_UQ: y ≠ 0 or unordered
	VMOVUPD.Z (SI), K1, Z2
	VMOVUPD   Z2, (DI)
	ADDQ      $64, DI
	ADDQ      $64, SI
	ADDQ      $64, DX
	DECQ      CX
	JNE       bloop

bdone:
	VZEROUPPER
	RET
