package rl

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Packed matrix multiplication for the layers' larger products. The
// arithmetic is done by a register-blocked micro-kernel (gemm_amd64.s: 4 rows
// × 24 columns of the result in 12 AVX-512 registers, fused multiply-adds)
// over B repacked into contiguous micro-panels, in the manner of GotoBLAS/BLIS:
// the product is split into blocks of gemmKC inner-dimension entries so that
// a B micro-panel (gemmKC×24) stays in L1 while the rows of A stream past it.
// Packing absorbs transposition, so one kernel serves x·W, dz·Wᵀ and xᵀ·dz.
// A is packed only for wide products: for the 40-unit layers of the FIRM
// networks, reading A in place makes a DDPG update 15% faster. Where the kernel is unavailable
// (no AVX-512, or another architecture) or the product is too small to repay
// the packing, gonum's Dgemm does the work. Without AVX-512 but with AVX2 and
// FMA (this project's AMD EPYC machine) a 4×12 kernel in 12 YMM registers
// computes each tile in two passes over the same packed panels.

const (
	gemmMR = 4   // rows of a micro-tile
	gemmNR = 24  // columns of a micro-tile (three 8-wide vectors)
	gemmKC = 128 // inner-dimension block: a B micro-panel is 24 KiB
	gemmMC = 256 // rows of a packed A block: 256 KiB

	// gemmPackPanels is the number of B panels (of 24 columns) from which A
	// is packed rather than read in place.
	gemmPackPanels = 4

	// gemmMinWork is the smallest m·n·k sent to the packed kernel; below it
	// packing costs more than the kernel saves. The two paths round
	// differently, so one state's output (a product of one row) may differ in
	// the last bit from the same state's row in a batch.
	gemmMinWork = 4096
)

var impl = blas64.Implementation()

// useAVX512 reports whether the AVX-512 packed kernel and vector gates run,
// useAVX2 whether, without them, the packed kernel runs on AVX2 and FMA
// (two 4×12 halves of each tile; the gates stay scalar). Both are set once
// from the CPU's features (and by tests, to exercise every path).
var (
	useAVX512 = avx512Supported()
	useAVX2   = !useAVX512 && avx2Supported()
)

// Kernels names the arithmetic in use: "avx512" when the packed kernel and
// the vector gates run, "avx2" when the packed kernel runs on AVX2, "gonum"
// when gonum's Dgemm and scalar loops do.
func Kernels() string {
	switch {
	case useAVX512:
		return "avx512"
	case useAVX2:
		return "avx2"
	}
	return "gonum"
}

// packedKernel reports whether a packed micro-kernel is available.
func packedKernel() bool { return useAVX512 || useAVX2 }

// kernelTile computes a 4×24 tile with the packed kernel in use (see
// kernel4x24): in one pass with AVX-512, in two 12-column passes with AVX2.
func kernelTile(k int, a *float64, rs, ps int, b, c *float64, ldc int, add bool) {
	if useAVX512 {
		kernel4x24(k, a, rs, ps, b, c, ldc, add)
		return
	}
	kernel4x12(k, a, rs, ps, b, c, ldc, add)
	kernel4x12(k, a, rs, ps, (*float64)(unsafe.Add(unsafe.Pointer(b), 12*8)), (*float64)(unsafe.Add(unsafe.Pointer(c), 12*8)), ldc, add)
}

// vectorLen is how many of n values the AVX-512 routines (which take multiples
// of 8) process; the scalar loops do the rest.
func vectorLen(n int) int {
	if !useAVX512 {
		return 0
	}
	return n &^ 7
}

// packedPays reports whether an m×n×k product goes to the packed kernel:
// with a packed kernel, at least 8 columns and enough work to repay the packing.
func packedPays(m, n, k int) bool {
	return packedKernel() && n >= 8 && m*n*k >= gemmMinWork
}

// panelsOf is the number of 24-column panels that hold n columns.
func panelsOf(n int) int { return (n + gemmNR - 1) / gemmNR }

// packedLen is the length of op(b) (k×n) packed by packB.
func packedLen(k, n int) int { return k * panelsOf(n) * gemmNR }

// gemmWork holds packing buffers, so that steady-state products do not
// allocate: a caller's own (a GRU's, used at every time step) or, for a nil
// one, borrowed from works for one product. A gemmWork must not be shared
// by concurrent calls.
type gemmWork struct {
	a, b []float64
	tile [gemmMR * gemmNR]float64
}

// gemm computes c = beta·c + op(a)·op(b), where op(a) is m×k (a is k×m and
// read transposed when ta is set), op(b) is k×n (likewise with tb) and c is
// m×n; lda, ldb and ldc are the row strides. beta is 0 (c is overwritten) or
// 1 (c is accumulated into); other values scale c first. A nil w borrows
// packing buffers from works.
func gemm(w *gemmWork, ta, tb bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if !packedPays(m, n, k) {
		impl.Dgemm(blasTrans(ta), blasTrans(tb), m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	checkGemm(ta, tb, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if w == nil {
		w = borrowWork()
		defer giveBackWork(w)
	}
	w.b = alignedBuf(w.b, packedLen(k, n))
	packB(w.b, tb, k, n, b, ldb)
	gemmPacked(w, ta, m, n, k, a, lda, w.b, beta, c, ldc)
}

// gemmPacked computes c = beta·c + op(a)·B, where B (k×n, k > 0) is already
// packed by packB. When B has few panels (a narrow layer) the kernel reads
// full 4-row panels of op(a) where they lie, row-major or transposed, and only
// the last, partial panel is copied; when there are many, each A panel is
// reused often enough that copying blocks of up to gemmMC rows into
// contiguous panels pays (strided rows 4 KiB apart also alias in L1). With
// beta 0 the first inner block writes c without reading it.
func gemmPacked(w *gemmWork, ta bool, m, n, k int, a []float64, lda int, bPacked []float64, beta float64, c []float64, ldc int) {
	if beta != 0 {
		scaleRows(m, n, beta, c, ldc)
	}
	panels := panelsOf(n)
	rs, ps := lda, 1
	if ta {
		rs, ps = 1, lda
	}
	packAll := panels >= gemmPackPanels
	for pc := 0; pc < k; pc += gemmKC {
		kb := min(gemmKC, k-pc)
		add := pc > 0 || beta != 0
		bBlock := bPacked[pc*panels*gemmNR:]
		for ic := 0; ic < m; ic += gemmMC {
			mb := min(gemmMC, m-ic)
			full := mb &^ (gemmMR - 1) // rows read in place when not packing all
			if packAll {
				full = 0
			}
			if full < mb {
				w.a = alignedBuf(w.a, (mb-full+gemmMR-1)/gemmMR*gemmMR*kb)
				packA(w.a, ta, mb-full, kb, a, lda, ic+full, pc)
			}
			for jr := range panels {
				j0 := jr * gemmNR
				bp := &bBlock[jr*kb*gemmNR]
				cols := min(gemmNR, n-j0)
				for ir := 0; ir < mb; ir += gemmMR {
					i0 := ic + ir
					var ap *float64
					ars, aps := 1, gemmMR
					if ir < full {
						ap, ars, aps = &a[i0*rs+pc*ps], rs, ps
					} else {
						ap = &w.a[(ir-full)*kb]
					}
					if ir+gemmMR <= mb && cols == gemmNR {
						kernelTile(kb, ap, ars, aps, bp, &c[i0*ldc+j0], ldc, add)
						continue
					}
					kernelTile(kb, ap, ars, aps, bp, &w.tile[0], gemmNR, false)
					for r := range min(gemmMR, mb-ir) {
						row := c[(i0+r)*ldc+j0 : (i0+r)*ldc+j0+cols]
						tile := w.tile[r*gemmNR : r*gemmNR+cols]
						if !add {
							copy(row, tile)
							continue
						}
						for j, v := range tile {
							row[j] += v
						}
					}
				}
			}
		}
	}
}

// packedB is a right-hand operand prepared once for many products with
// different left operands (a recurrent weight matrix used at every time step).
// When the packed kernel does not apply it keeps a reference to the operand.
type packedB struct {
	tb        bool
	k, n, ldb int
	b         []float64 // the operand itself, for the gonum path
	data      []float64 // packed panels, for the kernel path
	kernel    bool      // whether data holds op(b) packed
}

// pack prepares op(b) (k×n, b read transposed when tb is set) for products
// with up to any number of rows; b must not change until the last product.
func (p *packedB) pack(tb bool, k, n int, b []float64, ldb int) {
	p.tb, p.k, p.n, p.b, p.ldb = tb, k, n, b, ldb
	p.kernel = packedKernel() && n >= 8 && k > 0
	if !p.kernel {
		return
	}
	p.data = alignedBuf(p.data, packedLen(k, n))
	packB(p.data, tb, k, n, b, ldb)
}

// gemmB computes c = beta·c + op(a)·op(b) (m×n) for the operand prepared in p.
func gemmB(w *gemmWork, ta bool, m int, a []float64, lda int, p *packedB, beta float64, c []float64, ldc int) {
	if !p.kernel || !packedPays(m, p.n, p.k) {
		gemm(w, ta, p.tb, m, p.n, p.k, a, lda, p.b, p.ldb, beta, c, ldc)
		return
	}
	checkGemm(ta, p.tb, m, p.n, p.k, len(a), lda, len(p.b), p.ldb, len(c), ldc)
	if w == nil {
		w = borrowWork()
		defer giveBackWork(w)
	}
	gemmPacked(w, ta, m, p.n, p.k, a, lda, p.data, beta, c, ldc)
}

// scaleRows sets c (m×n, stride ldc) to beta·c.
func scaleRows(m, n int, beta float64, c []float64, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// packB copies op(b) (k×n) into dst as consecutive blocks of gemmKC rows;
// within a block of kb rows, panel jr holds columns 24·jr… as kb rows of 24,
// zero-padded past column n.
func packB(dst []float64, tb bool, k, n int, b []float64, ldb int) {
	panels := panelsOf(n)
	o := 0
	for pc := 0; pc < k; pc += gemmKC {
		kb := min(gemmKC, k-pc)
		for jr := range panels {
			j0 := jr * gemmNR
			w := min(gemmNR, n-j0)
			panel := dst[o : o+kb*gemmNR]
			o += kb * gemmNR
			if w < gemmNR {
				clear(panel)
			}
			if !tb {
				for p := range kb {
					copy(panel[p*gemmNR:p*gemmNR+w], b[(pc+p)*ldb+j0:])
				}
				continue
			}
			for j := range w {
				col := b[(j0+j)*ldb+pc:]
				for p := range kb {
					panel[p*gemmNR+j] = col[p]
				}
			}
		}
	}
}

// packA copies rows i0…i0+mb and inner entries p0…p0+kb of op(a) into dst
// as micro-panels of 4 rows, each kb entries of 4 interleaved values,
// zero-padded past row mb.
func packA(dst []float64, ta bool, mb, kb int, a []float64, lda, i0, p0 int) {
	for ir := 0; ir < mb; ir += gemmMR {
		panel := dst[ir*kb : ir*kb+gemmMR*kb]
		h := min(gemmMR, mb-ir)
		switch {
		case h < gemmMR:
			clear(panel)
			for r := range h {
				for p := range kb {
					if ta {
						panel[p*gemmMR+r] = a[(p0+p)*lda+i0+ir+r]
					} else {
						panel[p*gemmMR+r] = a[(i0+ir+r)*lda+p0+p]
					}
				}
			}
		case ta:
			for p := range kb {
				src := a[(p0+p)*lda+i0+ir : (p0+p)*lda+i0+ir+gemmMR]
				q := panel[p*gemmMR : p*gemmMR+gemmMR]
				q[0], q[1], q[2], q[3] = src[0], src[1], src[2], src[3]
			}
		default:
			o := (i0+ir)*lda + p0
			a0, a1 := a[o:o+kb], a[o+lda:o+lda+kb]
			a2, a3 := a[o+2*lda:o+2*lda+kb], a[o+3*lda:o+3*lda+kb]
			for p, v := range a0 {
				q := panel[p*gemmMR : p*gemmMR+gemmMR]
				q[0], q[1], q[2], q[3] = v, a1[p], a2[p], a3[p]
			}
		}
	}
}

// alignedBuf returns s resized to n if its capacity allows, or a new slice of
// n zeros starting on a 64-byte boundary, so that the kernel's 64-byte loads
// of packed panels never straddle two cache lines. s must come from
// alignedBuf.
func alignedBuf(s []float64, n int) []float64 {
	if cap(s) >= n {
		return s[:n]
	}
	const line = 64 / 8
	buf := make([]float64, n+line-1)
	off := int(uintptr(unsafe.Pointer(&buf[0]))/8) % line
	off = (line - off) % line
	return buf[off : off+n : off+n]
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// checkGemm panics, as gonum's Dgemm does, when a buffer is too short for its
// shape and stride; the kernel itself reads through raw pointers.
func checkGemm(ta, tb bool, m, n, k, na, lda, nb, ldb, nc, ldc int) {
	rowsA, colsA := m, k
	if ta {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if tb {
		rowsB, colsB = n, k
	}
	switch {
	case m < 0 || n < 0 || k < 0:
		panic("rl: gemm: negative dimension")
	case lda < max(1, colsA) || (rowsA > 0 && na < (rowsA-1)*lda+colsA):
		panic("rl: gemm: a is too short for its shape")
	case ldb < max(1, colsB) || (rowsB > 0 && nb < (rowsB-1)*ldb+colsB):
		panic("rl: gemm: b is too short for its shape")
	case ldc < max(1, n) || nc < (m-1)*ldc+n:
		panic("rl: gemm: c is too short for its shape")
	}
}
