package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMovingAverage(t *testing.T) {
	assert.Equal(t, []float64{1, 1.5, 2.5, 3.5}, MovingAverage([]float64{1, 2, 3, 4}, 2))
	assert.Equal(t, []float64{1, 2}, MovingAverage([]float64{1, 2}, 1))
}

func TestSave(t *testing.T) {
	dir := t.TempDir()
	c := Curves{
		Title: "ddpg on app-0001", XLabel: "episode", YLabel: "reward",
		Series: []Series{{Name: "ddpg", Y: []float64{60, 80, 95, 100, 104}}}, Smooth: 3,
		References: []Reference{{Name: "hpa+vpa", Y: 98}},
	}
	for _, ext := range []string{"png", "svg", "pdf"} {
		path := filepath.Join(dir, "curve."+ext)
		require.NoError(t, Save(path, c), ext)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Greater(t, len(b), 500, ext)
	}
	b, err := os.ReadFile(filepath.Join(dir, "curve.png"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
	svg, err := os.ReadFile(filepath.Join(dir, "curve.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "hpa+vpa")

	// Same input, same bytes.
	require.NoError(t, Save(filepath.Join(dir, "again.png"), c))
	again, err := os.ReadFile(filepath.Join(dir, "again.png"))
	require.NoError(t, err)
	assert.Equal(t, b, again)
}

func TestSaveErrors(t *testing.T) {
	dir := t.TempDir()
	ok := Curves{Series: []Series{{Name: "a", Y: []float64{1}}}}
	for name, tc := range map[string]struct {
		path string
		c    Curves
		want string
	}{
		"extension": {"x.jpg", ok, `unsupported extension ".jpg"`},
		"no series": {"x.png", Curves{}, "no series"},
		"empty":     {"x.png", Curves{Series: []Series{{Name: "a"}}}, `series 0 ("a") is empty`},
		"nan":       {"x.png", Curves{Series: []Series{{Name: "a", Y: []float64{1, nanv()}}}}, `series "a": point 2 is NaN`},
		"bad ref":   {"x.png", Curves{Series: ok.Series, References: []Reference{{Name: "r", Y: nanv()}}}, `reference "r" is NaN`},
	} {
		err := Save(filepath.Join(dir, tc.path), tc.c)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}

func nanv() float64 { z := 0.0; return z / z }
