package segments

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFloatOperations(t *testing.T) {
	for _, n := range []int{1, 2, 1000, floatChunk, floatChunk + 1, 3*floatChunk - 5, 200_000} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			want := 0.0
			for i := range n {
				x := float64(i)
				want += float64(math.Sin(x)*math.Cos(x)) + math.Sqrt(x)
			}
			r, err := floatOpsSeg{n: n}.Run(context.Background())
			require.NoError(t, err)
			assert.Equal(t, want, math.Float64frombits(r.Checksum))
			assert.EqualValues(t, n, r.Ops)
		})
	}
	// The sum is dominated by Σ√i ≈ (2/3)·n^1.5.
	r, err := floatOpsSeg{n: 1_000_000}.Run(context.Background())
	require.NoError(t, err)
	assert.InEpsilon(t, 2.0/3*math.Pow(1e6, 1.5), math.Float64frombits(r.Checksum), 1e-3)
}

func TestFloatOperationsStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := floatOpsSeg{n: 1 << 40}.Run(ctx) // would run for hours
	require.ErrorIs(t, err, context.Canceled)
}
