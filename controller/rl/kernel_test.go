package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
)

var kernelShapes = [][3]int{ // m, n, k
	{1, 1, 1}, {1, 3, 9}, {1, 40, 9}, {1, 1, 40}, {2, 5, 3}, {3, 7, 5},
	{4, 4, 4}, {5, 1, 12}, {7, 13, 11}, {8, 3, 40}, {64, 40, 9}, {64, 40, 40},
	{64, 3, 40}, {64, 1, 40}, {9, 40, 64}, {40, 40, 64}, {40, 1, 64}, {17, 6, 1},
}

func randSlice(rnd *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 2*rnd.Float64() - 1
	}
	return s
}

func requireClose(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-12, "element %d", i)
	}
}

func TestGemmNN(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 1))
	for _, s := range kernelShapes {
		m, n, k := s[0], s[1], s[2]
		for _, tc := range []struct {
			bias, relu bool
		}{{false, false}, {true, false}, {true, true}} {
			t.Run(fmt.Sprintf("%dx%dx%d/bias=%v/relu=%v", m, n, k, tc.bias, tc.relu), func(t *testing.T) {
				a, b := randSlice(rnd, m*k), randSlice(rnd, k*n)
				var bias []float64
				if tc.bias {
					bias = randSlice(rnd, n)
				}
				want := make([]float64, m*n)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						var v float64
						if bias != nil {
							v = bias[j]
						}
						for p := 0; p < k; p++ {
							v += a[i*k+p] * b[p*n+j]
						}
						if tc.relu {
							v = math.Max(v, 0)
						}
						want[i*n+j] = v
					}
				}
				got := randSlice(rnd, m*n) // overwritten
				gemmNN(m, n, k, a, b, got, bias, tc.relu)
				requireClose(t, want, got)
			})
		}
	}
}

func TestGemmTN(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 2))
	for _, s := range kernelShapes {
		m, n, k := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
			a, b, c := randSlice(rnd, k*m), randSlice(rnd, k*n), randSlice(rnd, m*n)
			want := append([]float64(nil), c...)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for p := 0; p < k; p++ {
						want[i*n+j] += a[p*m+i] * b[p*n+j]
					}
				}
			}
			gemmTN(m, n, k, a, b, c)
			requireClose(t, want, c)
		})
	}
}

func TestGemmNT(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 3))
	for _, s := range kernelShapes {
		m, n, k := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
			a, b := randSlice(rnd, m*k), randSlice(rnd, n*k)
			want := make([]float64, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for p := 0; p < k; p++ {
						want[i*n+j] += a[i*k+p] * b[j*k+p]
					}
				}
			}
			got := randSlice(rnd, m*n) // overwritten
			gemmNT(m, n, k, a, b, got)
			requireClose(t, want, got)
		})
	}
}

func TestGemmKernelsAllocateNothing(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 4))
	a, b, c, bias := randSlice(rnd, 64*40), randSlice(rnd, 40*40), randSlice(rnd, 64*40), randSlice(rnd, 40)
	allocs := testing.AllocsPerRun(10, func() {
		gemmNN(64, 40, 40, a, b, c, bias, true)
		gemmTN(40, 40, 64, a, c, b)
		gemmNT(64, 40, 40, c, b, a)
	})
	require.Zero(t, allocs)
}

// BenchmarkGemm compares the kernels with gonum's Dgemm on the FIRM layer
// shapes (batch 1 and 64).
func BenchmarkGemm(b *testing.B) {
	rnd := rand.New(rand.NewPCG(7, 5))
	for _, s := range [][3]int{{1, 9, 40}, {1, 40, 40}, {1, 40, 3}, {64, 9, 40}, {64, 40, 40}, {64, 40, 3}, {64, 64, 64}} {
		batch, in, out := s[0], s[1], s[2]
		x, w, y := randSlice(rnd, batch*in), randSlice(rnd, in*out), randSlice(rnd, batch*out)
		bias, gw, dx := randSlice(rnd, out), randSlice(rnd, in*out), randSlice(rnd, batch*in)
		name := fmt.Sprintf("%dx%d/batch%d", in, out, batch)
		b.Run(name+"/NN/kernel", func(b *testing.B) {
			for b.Loop() {
				gemmNN(batch, out, in, x, w, y, bias, true)
			}
		})
		b.Run(name+"/NN/gonum", func(b *testing.B) {
			for b.Loop() {
				impl.Dgemm(blas.NoTrans, blas.NoTrans, batch, out, in, 1, x, in, w, out, 1, y, out)
			}
		})
		b.Run(name+"/TN/kernel", func(b *testing.B) {
			for b.Loop() {
				gemmTN(in, out, batch, x, y, gw)
			}
		})
		b.Run(name+"/TN/gonum", func(b *testing.B) {
			for b.Loop() {
				impl.Dgemm(blas.Trans, blas.NoTrans, in, out, batch, 1, x, in, y, out, 1, gw, out)
			}
		})
		b.Run(name+"/NT/kernel", func(b *testing.B) {
			for b.Loop() {
				gemmNT(batch, in, out, y, w, dx)
			}
		})
		b.Run(name+"/NT/gonum", func(b *testing.B) {
			for b.Loop() {
				impl.Dgemm(blas.NoTrans, blas.Trans, batch, in, out, 1, y, out, w, out, 0, dx, in)
			}
		})
	}
}
