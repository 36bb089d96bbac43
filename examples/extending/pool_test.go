package extending_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// simulated is the first n applications of the paper's pool on the
// simulator, over synthetic shapes, with the committed profile.
func simulated(t *testing.T, n int) (*calibration.Profile, []sim.App) {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps = n
	apps, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	shapes, err := generator.LoadShapes("", 30*time.Second, 1)
	require.NoError(t, err)
	simApps, err := generator.SimApps(apps, shapes)
	require.NoError(t, err)
	return prof, simApps
}
