package meta

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSimilarity(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"identical", []float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{"scaled", []float64{1, 0}, []float64{3, 0}, (1 - 0.5 + 1) / 2},
		{"orthogonal", []float64{1, 0}, []float64{0, 1}, (1 - 0.7071067811865476 + 0) / 2},
		{"opposite", []float64{1, 0}, []float64{-1, 0}, -0.5},
		{"both zero", []float64{0, 0}, []float64{0, 0}, 1},
		{"one zero", []float64{0, 0}, []float64{0, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, Similarity(tc.a, tc.b), 1e-12)
			assert.InDelta(t, tc.want, Similarity(tc.b, tc.a), 1e-12, "symmetric")
		})
	}
	assert.Panics(t, func() { Similarity([]float64{1}, []float64{1, 2}) })
}
