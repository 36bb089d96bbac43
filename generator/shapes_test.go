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
	"github.com/aware-autoscaler/aware/workloads/trace/shipped"
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
	const step = 30 * time.Second

	for _, tc := range []struct {
		name   string
		dir    string
		origin map[string]string
		steps  map[string]int
	}{
		{
			name: "file in the folder, else shipped copy, else fitted shape",
			dir:  dir,
			origin: map[string]string{
				SourceNASA:     "real: " + shipped.NASA,
				SourceAzureLLM: "shipped: " + shipped.AzureLLM,
				SourceTwitter:  "fitted to " + shipped.Twitter,
			},
			// 600 s of the planted file; the shipped Azure LLM trace (its
			// requests span 57 minutes); the 11 days of the Twitter trace.
			steps: map[string]int{SourceNASA: 20, SourceAzureLLM: 114, SourceTwitter: 264 * 120},
		},
		{
			name: "absent folder: shipped copies and the fitted shape",
			dir:  filepath.Join(dir, "absent"),
			origin: map[string]string{
				SourceNASA:     "shipped: " + shipped.NASA,
				SourceAzureLLM: "shipped: " + shipped.AzureLLM,
				SourceTwitter:  "fitted to " + shipped.Twitter,
			},
			steps: map[string]int{SourceNASA: 29 * 24 * 120, SourceAzureLLM: 114, SourceTwitter: 264 * 120},
		},
		{
			name:   "no folder: synthetic stand-ins only",
			dir:    "",
			origin: map[string]string{SourceNASA: "synthetic", SourceAzureLLM: "synthetic", SourceTwitter: "synthetic"},
			steps:  map[string]int{SourceNASA: 7 * 24 * 120, SourceAzureLLM: 7 * 24 * 120, SourceTwitter: 7 * 24 * 120},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := LoadShapes(tc.dir, step, 1)
			require.NoError(t, err)
			assert.Equal(t, tc.origin, sh.Origin)
			for src, n := range tc.steps {
				assert.Equal(t, n, len(sh.Shapes[src]), src)
			}
			for src, s := range sh.Shapes {
				assert.InDelta(t, 1, mean(s), 1e-9, src)
			}
			again, err := LoadShapes(tc.dir, step, 1)
			require.NoError(t, err)
			assert.Equal(t, sh.Shapes, again.Shapes, "shapes are seeded")
		})
	}

	// The fitted and synthetic shapes follow the seed.
	a, err := LoadShapes(dir, step, 1)
	require.NoError(t, err)
	b, err := LoadShapes(dir, step, 2)
	require.NoError(t, err)
	assert.Equal(t, a.Shapes[SourceNASA], b.Shapes[SourceNASA])
	assert.NotEqual(t, a.Shapes[SourceTwitter], b.Shapes[SourceTwitter])

	// The shipped copies are the shared files: a folder holding them gives
	// the same shapes, as "real".
	shared := "../../shared/traces"
	if _, err := os.Stat(filepath.Join(shared, shipped.NASA)); err == nil {
		onShared, err := LoadShapes(shared, step, 1)
		require.NoError(t, err)
		fresh, err := LoadShapes(filepath.Join(dir, "absent"), step, 1)
		require.NoError(t, err)
		for _, src := range []string{SourceNASA, SourceAzureLLM} {
			assert.Equal(t, "real: "+traceFiles[src], onShared.Origin[src])
			assert.Equal(t, onShared.Shapes[src], fresh.Shapes[src], src)
		}
	} else {
		t.Logf("%s absent: shipped copies not compared with the shared files", shared)
	}

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
