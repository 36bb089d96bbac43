package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// naiveGemm is the reference: c = beta·c + op(a)·op(b), summed in order.
func naiveGemm(ta, tb bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				var av, bv float64
				if ta {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tb {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			c[i*ldc+j] = beta*c[i*ldc+j] + s
		}
	}
}

// TestGemm checks the packed product against the reference on every
// transposition, with and without padding strides, across the block edges
// (4-row and 24-column tiles, 128-entry and 256-row blocks), and with the
// kernel forced off (gonum's path) so both paths are covered on any machine.
func TestGemm(t *testing.T) {
	shapes := [][3]int{ // m, n, k
		{64, 40, 40}, {64, 40, 9}, {40, 40, 64}, {20, 768, 256}, {3, 25, 130},
		{5, 47, 1}, {257, 49, 129}, {4, 24, 128}, {7, 8, 300}, {1, 100, 50},
		{300, 30, 20}, {16, 9, 33}, {257, 100, 129}, {3, 97, 5}, {300, 120, 20},
	}
	rnd := rand.New(rand.NewPCG(11, 2))
	for _, path := range kernelPaths {
		if !pathSupported(path) {
			continue
		}
		for _, s := range shapes {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, beta := range []float64{0, 1, 0.5} {
						m, n, k := s[0], s[1], s[2]
						name := fmt.Sprintf("%s/%dx%dx%d/ta=%t/tb=%t/beta=%g", path, m, n, k, ta, tb, beta)
						t.Run(name, func(t *testing.T) {
							setPath(t, path)
							ra, ca := m, k
							if ta {
								ra, ca = k, m
							}
							rb, cb := k, n
							if tb {
								rb, cb = n, k
							}
							lda, ldb, ldc := ca+3, cb+1, n+5
							a, b := randSlice(rnd, ra*lda), randSlice(rnd, rb*ldb)
							c := randSlice(rnd, m*ldc)
							want := append([]float64(nil), c...)
							naiveGemm(ta, tb, m, n, k, a, lda, b, ldb, beta, want, ldc)
							c2 := append([]float64(nil), c...)
							var w gemmWork
							gemm(&w, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)
							var p packedB // the recurrent weights' path: B packed once
							p.pack(tb, k, n, b, ldb)
							gemmB(&w, ta, m, a, lda, &p, beta, c2, ldc)
							for i := range want {
								require.InDelta(t, want[i], c[i], 1e-10, "gemm: element %d (row %d, column %d)", i, i/ldc, i%ldc)
								require.InDelta(t, want[i], c2[i], 1e-10, "gemmB: element %d (row %d, column %d)", i, i/ldc, i%ldc)
							}
						})
					}
				}
			}
		}
	}
}

func TestGemmSteadyStateAllocatesNothing(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	a, b, c := randSlice(rnd, 64*40), randSlice(rnd, 40*40), make([]float64, 64*40)
	var w gemmWork
	require.Zero(t, testing.AllocsPerRun(10, func() {
		gemm(&w, false, false, 64, 40, 40, a, 40, b, 40, 0, c, 40)
	}))
}

func TestGemmRejectsShortBuffers(t *testing.T) {
	if !avx512Supported() {
		t.Skip("gonum's Dgemm does its own checks")
	}
	var w gemmWork
	a, b, c := make([]float64, 64*40), make([]float64, 40*40), make([]float64, 64*40)
	require.PanicsWithValue(t, "rl: gemm: a is too short for its shape", func() {
		gemm(&w, false, false, 64, 40, 40, a[1:], 40, b, 40, 0, c, 40)
	})
	require.PanicsWithValue(t, "rl: gemm: b is too short for its shape", func() {
		gemm(&w, false, true, 64, 40, 40, a, 40, b[:len(b)-1], 40, 0, c, 40)
	})
	require.PanicsWithValue(t, "rl: gemm: c is too short for its shape", func() {
		gemm(&w, false, false, 64, 40, 40, a, 40, b, 40, 0, c[:len(c)-1], 40)
	})
}

// BenchmarkGemmPacked compares the packed kernel, with B packed per call and
// packed once beforehand (as the GRU does with its recurrent weights), and
// gonum's Dgemm on the products of the FIRM networks and the BiGRU.
func BenchmarkGemmPacked(b *testing.B) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{64, 40, 40}, {20, 768, 256}, {2000, 768, 512}} {
		m, n, k := s[0], s[1], s[2]
		a, bb, c := randSlice(rnd, m*k), randSlice(rnd, k*n), make([]float64, m*n)
		flops := func(b *testing.B) {
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		for _, path := range []string{"avx512", "avx512-prepacked", "avx2", "avx2-prepacked", "gonum"} {
			kernel, _, prepacked := strings.Cut(path, "-")
			if !pathSupported(kernel) {
				continue
			}
			b.Run(fmt.Sprintf("%dx%dx%d/%s", m, n, k, path), func(b *testing.B) {
				setPath(b, kernel)
				var w gemmWork
				var p packedB
				p.pack(false, k, n, bb, n)
				for b.Loop() {
					if prepacked {
						gemmB(&w, false, m, a, k, &p, 0, c, n)
					} else {
						gemm(&w, false, false, m, n, k, a, k, bb, n, 0, c, n)
					}
				}
				flops(b)
			})
		}
	}
}

// TestGates compares the vectorised σ and tanh with math over the whole
// range, the clamping limits and a tail shorter than a vector; NaN must pass
// through (a diverged network has to stay visibly diverged).
func TestGates(t *testing.T) {
	rnd := rand.New(rand.NewPCG(8, 9))
	x := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-9, -1e-9, 0.5, -0.5, 20, -20, 36, -36,
		354, -354, 355, -355, -500, -690, -700, 707, -707, 709, -709, 710, -710, 1e6, -1e6,
		math.Inf(1), math.Inf(-1), math.NaN()}
	for range 2000 {
		x = append(x, 40*rnd.NormFloat64(), rnd.NormFloat64())
	}
	x = append(x, 0.25, -3) // a tail after the last full vector
	for _, vec := range []bool{true, false} {
		if vec && !avx512Supported() {
			continue
		}
		t.Run(fmt.Sprintf("avx512=%t", vec), func(t *testing.T) {
			defer func(u bool) { useAVX512 = u }(useAVX512)
			useAVX512 = vec
			s, th := append([]float64(nil), x...), append([]float64(nil), x...)
			sigmoids(s)
			tanhs(th)
			for i, v := range x {
				wantS, wantT := 1/(1+math.Exp(-v)), math.Tanh(v)
				if math.IsNaN(v) {
					require.True(t, math.IsNaN(s[i]) && math.IsNaN(th[i]), "NaN must pass through")
					continue
				}
				if v > -708 { // relative: σ is e^v down to 1e-308
					require.InEpsilon(t, wantS, s[i], 1e-15, "σ(%v)", v)
				} else { // clamped
					require.InDelta(t, wantS, s[i], 1.3e-308, "σ(%v)", v)
				}
				require.InDelta(t, wantT, th[i], 6e-16, "tanh(%v)", v)
			}
		})
	}
}

func BenchmarkGates(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 768)
	for i := range x {
		x[i] = 3 * rnd.NormFloat64()
	}
	y := make([]float64, len(x))
	for _, vec := range []bool{true, false} {
		if vec && !avx512Supported() {
			continue
		}
		b.Run(fmt.Sprintf("sigmoid/avx512=%t", vec), func(b *testing.B) {
			defer func(u bool) { useAVX512 = u }(useAVX512)
			useAVX512 = vec
			for b.Loop() {
				copy(y, x)
				sigmoids(y)
			}
		})
		b.Run(fmt.Sprintf("tanh/avx512=%t", vec), func(b *testing.B) {
			defer func(u bool) { useAVX512 = u }(useAVX512)
			useAVX512 = vec
			for b.Loop() {
				copy(y, x)
				tanhs(y)
			}
		})
	}
}

// TestReLUVector checks the vectorised ReLU passes against Go's max and the
// scalar backward rule, on signed zeros, NaN, infinities and a short tail.
func TestReLUVector(t *testing.T) {
	if !avx512Supported() {
		t.Skip("no AVX-512: the scalar path is the only one")
	}
	rnd := rand.New(rand.NewPCG(4, 4))
	x := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, -1e-310}
	for range 50 {
		x = append(x, rnd.NormFloat64())
	}
	dy := randSlice(rnd, len(x))
	run := func(vec bool) (y, dz []float64) {
		defer func(u bool) { useAVX512 = u }(useAVX512)
		useAVX512 = vec
		y = append([]float64(nil), x...)
		ReLU.apply(y)
		dz = make([]float64, len(x))
		ReLU.backward(dz, dy, y)
		return y, dz
	}
	yv, dzv := run(true)
	ys, dzs := run(false)
	for i := range x {
		require.Equal(t, math.Float64bits(ys[i]), math.Float64bits(yv[i]), "relu(%v)", x[i])
		require.Equal(t, math.Float64bits(dzs[i]), math.Float64bits(dzv[i]), "relu'(%v)", x[i])
	}
}

func TestKernelsNamesThePath(t *testing.T) {
	for _, path := range kernelPaths {
		t.Run(path, func(t *testing.T) {
			setPath(t, path)
			require.Equal(t, path, Kernels())
		})
	}
}

// kernelPaths are the arithmetic paths, fastest first.
var kernelPaths = []string{"avx512", "avx2", "gonum"}

// pathSupported reports whether this machine can run path.
func pathSupported(path string) bool {
	switch path {
	case "avx512":
		return avx512Supported()
	case "avx2":
		return avx2Supported()
	}
	return true
}

// setPath switches the arithmetic to path (see kernelPaths) until the test
// ends; the caller checks pathSupported first.
func setPath(t testing.TB, path string) {
	t.Helper()
	a512, a2 := useAVX512, useAVX2
	t.Cleanup(func() { useAVX512, useAVX2 = a512, a2 })
	useAVX512, useAVX2 = path == "avx512", path == "avx2"
}
