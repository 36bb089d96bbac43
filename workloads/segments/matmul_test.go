package segments

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatMulMatchesNaiveProduct(t *testing.T) {
	for _, size := range append([]int{1, 2, 3}, cpuSizes(t, "matMul")...) {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			env := cpuEnv(t, 13)
			inst, err := newMatMul(size, env)
			require.NoError(t, err)
			c := inst.product()
			a, b := inst.a.RawMatrix(), inst.b.RawMatrix()
			got := c.RawMatrix()
			require.Equal(t, size, got.Rows)
			require.Equal(t, size, got.Cols)
			for i := range size {
				for j := range size {
					var want, scale float64
					for k := range size {
						p := a.Data[i*a.Stride+k] * b.Data[k*b.Stride+j]
						want += p
						scale += math.Abs(p)
					}
					diff := math.Abs(got.Data[i*got.Stride+j] - want)
					require.LessOrEqual(t, diff, 1e-9*math.Max(scale, 1e-300), "c[%d][%d]", i, j)
				}
			}
		})
	}
}
