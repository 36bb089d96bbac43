package generator

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func TestLoadShapes(t *testing.T) {
	dir := t.TempDir()
	// A real NASA-format file (per-second counts, gzip'd) beside absent ones.
	f, err := os.Create(filepath.Join(dir, traceFiles[SourceNASA]))
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	for i := range 600 {
		_, err = zw.Write([]byte{byte('0' + i%3), ' '})
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())

	sh, err := LoadShapes(dir, 30*time.Second, 1)
	require.NoError(t, err)
	assert.Equal(t, "real: "+traceFiles[SourceNASA], sh.Origin[SourceNASA])
	assert.Len(t, sh.Shapes[SourceNASA], 20)
	assert.Equal(t, "synthetic", sh.Origin[SourceTwitter])
	assert.Len(t, sh.Shapes[SourceTwitter], 7*24*120)
	for src, s := range sh.Shapes {
		assert.InDelta(t, 1, mean(s), 1e-9, src)
	}
	again, err := LoadShapes(filepath.Join(dir, "absent"), 30*time.Second, 1)
	require.NoError(t, err)
	assert.Equal(t, sh.Shapes[SourceTwitter], again.Shapes[SourceTwitter], "synthetic shapes are seeded")

	_, err = LoadShapes(dir, time.Millisecond, 1)
	assert.ErrorContains(t, err, "step")
}

func TestSimApps(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.Apps = 30
	apps, err := Generate(opts, prof)
	require.NoError(t, err)
	sh, err := LoadShapes("", time.Minute, 1)
	require.NoError(t, err)
	out, err := SimApps(apps, sh)
	require.NoError(t, err)
	require.Len(t, out, 30)
	for i, a := range out {
		g := apps[i]
		require.NoError(t, a.Validate())
		assert.Equal(t, g.Name(), a.Name)
		assert.Equal(t, g.Spec.Segments, a.Chain)
		assert.Equal(t, g.Load.MeanRate, a.Load.Scale)
		assert.Equal(t, g.Load.Offset/60, a.Load.Offset)
		assert.Equal(t, g.Initial.Replicas, a.Initial.Replicas)
		switch g.SLO.Kind {
		case LatencySLO:
			assert.Equal(t, gym.SLO{Kind: gym.LatencySLO, Target: g.SLO.LatencyP99}, a.SLO)
		case ThroughputSLO:
			assert.Equal(t, gym.SLO{Kind: gym.ThroughputSLO, Target: g.SLO.Throughput}, a.SLO)
		}
	}
	apps[0].Load.Source = "mars"
	_, err = SimApps(apps, sh)
	assert.ErrorContains(t, err, `"mars"`)
}
