//go:build amd64 && !purego

package rl

// kernel4x24 adds (add set) or writes the product of a 4×k A micro-panel and
// a packed k×24 B micro-panel to the 4×24 tile at c (row stride ldc). A(r, p)
// is read at a[r·rs + p·ps], so one kernel serves row-major A (rs = lda,
// ps = 1), transposed A (rs = 1, ps = lda) and packed panels (rs = 1, ps = 4).
// k may be 0.
//
//go:noescape
func kernel4x24(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool)

// kernel4x12 is kernel4x24 for the left 12 columns of a packed 24-column
// micro-panel (whose rows stay 24 apart), in AVX2 and FMA: pass b and c
// advanced by 12 values for the right half.
//
//go:noescape
func kernel4x12(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool)

// cpuid and xgetbv query the processor (gemm_amd64.s).
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// avx512Supported reports whether the processor has AVX-512F and FMA and the
// operating system saves the vector registers they use.
func avx512Supported() bool {
	// XCR0: SSE and AVX state (bits 1, 2), opmask and the upper ZMM halves and
	// registers (bits 5, 6, 7).
	const avx512f = 1 << 16
	return fmaWith(0xe6, avx512f)
}

// fmaWith reports whether the processor has FMA and the structured-extended
// feature bits ebx7 (CPUID leaf 7), and the operating system saves the
// register state bits xcr0.
func fmaWith(xcr0Bits, ebx7Bits uint32) bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave = 1 << 12, 1 << 27
	if ecx1&fma == 0 || ecx1&osxsave == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&xcr0Bits != xcr0Bits {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&ebx7Bits == ebx7Bits
}

// avx2Supported reports whether the processor has AVX2 and FMA and the
// operating system saves the YMM registers.
func avx2Supported() bool {
	const avx2 = 1 << 5
	return fmaWith(0x6, avx2) // SSE and AVX state
}

// sigmoidVec and tanhVec apply σ and tanh in place to x[:n], n a multiple of
// 8 (gemm_amd64.s, AVX-512).
//
//go:noescape
func sigmoidVec(x *float64, n int)

//go:noescape
func tanhVec(x *float64, n int)

// reluVec and reluBackVec are ReLU's forward (in place) and backward passes
// over n elements, n a multiple of 8 (gemm_amd64.s, AVX-512).
//
//go:noescape
func reluVec(x *float64, n int)

//go:noescape
func reluBackVec(dz, dy, y *float64, n int)
