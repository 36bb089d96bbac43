package generator

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/calibration"
)

func TestAppIndex(t *testing.T) {
	for _, i := range []int{1, 42, DefaultOptions().Apps} {
		got, err := AppIndex(AppName(i))
		require.NoError(t, err)
		assert.Equal(t, i, got)
	}
	for _, tc := range []struct{ name, want string }{
		{"web", `"web": want a pool name like app-0001`},
		{"app-0000", `"app-0000": want a pool name`},
		{"app-x", `"app-x": want a pool name`},
		{"app-9999", `"app-9999": not in the pool, which holds app-0001 to app-1000`},
	} {
		_, err := AppIndex(tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestFirstAppsSimulatedAndWritePool(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	apps, err := FirstApps(prof, 3, 4)
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.Apps, opts.Seed = 4, 3
	want, err := Generate(opts, prof)
	require.NoError(t, err)
	assert.Equal(t, want, apps, "the pool's first apps with the default options")

	dir := t.TempDir()
	simApps, shapes, err := Simulated(apps, filepath.Join(dir, "no-traces"), 30*time.Second, 1)
	require.NoError(t, err)
	require.Len(t, simApps, 4)
	for i, a := range apps {
		assert.Equal(t, a.Name(), simApps[i].Name)
		assert.Contains(t, shapes.Shapes, a.Load.Source)
	}

	require.NoError(t, WritePool(filepath.Join(dir, "pool"), apps, prof))
	back, err := ReadDir(filepath.Join(dir, "pool"))
	require.NoError(t, err)
	assert.Len(t, back, 4)
	summary, err := os.ReadFile(filepath.Join(dir, "pool", "summary.md"))
	require.NoError(t, err)
	assert.NotEmpty(t, summary)
}
