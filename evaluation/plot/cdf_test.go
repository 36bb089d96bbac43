package plot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestECDF(t *testing.T) {
	xs, ps := ECDF([]float64{3, 1, 2, 2})
	assert.Equal(t, []float64{1, 2, 3}, xs)
	assert.Equal(t, []float64{0.25, 0.75, 1}, ps)
	xs, ps = ECDF([]float64{5})
	assert.Equal(t, []float64{5}, xs)
	assert.Equal(t, []float64{1}, ps)
}

func TestSaveCDF(t *testing.T) {
	dir := t.TempDir()
	c := CDF{Title: "episodes to converge", XLabel: "episodes", Samples: []Sample{
		{Name: "AWARE", Values: []float64{8, 12, 9, 15, 11}},
		{Name: "TL", Values: []float64{40, 61, 55, 90, 70}},
	}}
	path := filepath.Join(dir, "cdf.png")
	require.NoError(t, SaveCDF(path, c))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
	require.NoError(t, SaveCDF(filepath.Join(dir, "cdf.svg"), c))
	svg, err := os.ReadFile(filepath.Join(dir, "cdf.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "TL")
	require.NoError(t, SaveCDF(filepath.Join(dir, "again.png"), c))
	again, err := os.ReadFile(filepath.Join(dir, "again.png"))
	require.NoError(t, err)
	assert.Equal(t, b, again, "same input, same bytes")

	for name, tc := range map[string]struct {
		c    CDF
		want string
	}{
		"none":  {CDF{}, "no samples"},
		"empty": {CDF{Samples: []Sample{{Name: "a"}}}, `sample 0 ("a") is empty`},
		"inf":   {CDF{Samples: []Sample{{Name: "a", Values: []float64{1, math.Inf(1)}}}}, `sample "a": value 2 is +Inf`},
	} {
		assert.ErrorContains(t, SaveCDF(filepath.Join(dir, "x.png"), tc.c), tc.want, name)
	}
	assert.ErrorContains(t, SaveCDF(filepath.Join(dir, "x.gif"), c), "unsupported extension")
}
