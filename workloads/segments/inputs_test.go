package segments

import (
	"bytes"
	"encoding/json"
	"image/color"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

func TestInputRandDependsOnSeedInstanceAndName(t *testing.T) {
	base := inputRand(Env{Seed: 1}, "compress").Uint64()
	assert.Equal(t, base, inputRand(Env{Seed: 1, Dir: "/elsewhere"}, "compress").Uint64())
	for name, env := range map[string]Env{
		"seed":     {Seed: 2},
		"instance": {Seed: 1, Instance: 1},
	} {
		assert.NotEqual(t, base, inputRand(env, "compress").Uint64(), name)
	}
	assert.NotEqual(t, base, inputRand(Env{Seed: 1}, "readFile").Uint64(), "name")
}

func TestGenLorem(t *testing.T) {
	for _, tc := range []struct {
		n          int
		paragraphs bool
	}{{0, false}, {1, true}, {17, false}, {1000, false}, {5000, true}, {128 << 10, true}} {
		text := genLorem(testRand(1), tc.n, tc.paragraphs)
		require.Len(t, text, tc.n)
		assert.Equal(t, text, genLorem(testRand(1), tc.n, tc.paragraphs), "deterministic")
		for i, c := range text {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == ' ' || c == ',' || c == '.' ||
				(tc.paragraphs && c == '\n')
			require.True(t, ok, "byte %d is %q", i, c)
		}
		assert.Equal(t, tc.paragraphs && tc.n > 5000-1, bytes.Contains(text, []byte("\n\n")), "n=%d", tc.n)
	}
	assert.NotEqual(t, genLorem(testRand(1), 200, false), genLorem(testRand(2), 200, false))
}

func TestGenBytes(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 1000} {
		b := genBytes(testRand(1), n)
		require.Len(t, b, n)
		assert.Equal(t, n, cap(b))
		assert.Equal(t, b, genBytes(testRand(1), n))
	}
	assert.NotEqual(t, genBytes(testRand(1), 64), genBytes(testRand(2), 64))
}

func TestGenJSON(t *testing.T) {
	for _, n := range []int{1, len(jsonEmptyDoc) - 1, len(jsonEmptyDoc), len(jsonEmptyDoc) + 1, 250, 500, 1000, 2000, 3000, 5000, 100_000} {
		doc, err := genJSON(testRand(5), n)
		require.NoError(t, err)
		require.True(t, json.Valid(doc), "n=%d: %s", n, doc)
		if n < len(jsonEmptyDoc) {
			assert.JSONEq(t, jsonEmptyDoc, string(doc))
			continue
		}
		assert.Len(t, doc, n, "n=%d", n)
		var v struct {
			Comment string
			Items   []map[string]any
		}
		require.NoError(t, json.Unmarshal(doc, &v))
		if n >= 1000 {
			require.NotEmpty(t, v.Items, "n=%d", n)
			assert.IsType(t, map[string]any{}, v.Items[0]["location"])
			assert.IsType(t, []any{}, v.Items[0]["tags"])
		}
		again, err := genJSON(testRand(5), n)
		require.NoError(t, err)
		assert.Equal(t, doc, again, "deterministic")
	}
}

func TestGenImageHasStructure(t *testing.T) {
	img := genImage(testRand(3), 160, 120)
	require.Equal(t, 160, img.Rect.Dx())
	require.Equal(t, 120, img.Rect.Dy())
	assert.Equal(t, img, genImage(testRand(3), 160, 120), "deterministic")
	// Neighbouring pixels are close (not noise), yet the image is not flat.
	var diff, pairs float64
	colours := map[color.RGBA]bool{}
	for y := range 120 {
		for x := range 159 {
			a, b := img.RGBAAt(x, y), img.RGBAAt(x+1, y)
			require.Equal(t, uint8(0xff), a.A)
			colours[a] = true
			diff += absDiff(a.R, b.R) + absDiff(a.G, b.G) + absDiff(a.B, b.B)
			pairs += 3
		}
	}
	assert.Less(t, diff/pairs, 12.0, "mean neighbour difference too large for a structured image")
	assert.Greater(t, len(colours), 1000)
}

func absDiff(a, b uint8) float64 {
	if a > b {
		return float64(a - b)
	}
	return float64(b - a)
}

func TestDigestFloats(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i) / 7
	}
	d := digestFloats(xs)
	assert.Equal(t, d, digestFloats(append([]float64(nil), xs...)))
	ys := append([]float64(nil), xs...)
	ys[999] = -ys[999]
	assert.NotEqual(t, d, digestFloats(ys), "a change past the first chunk must show")
	ys[999], ys[0] = xs[999], xs[1]
	assert.NotEqual(t, d, digestFloats(ys))
}
