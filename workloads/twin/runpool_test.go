package twin

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

func TestPoolConfigValidate(t *testing.T) {
	good := PoolConfig{Apps: 1, Addr: "127.0.0.1:0", Tick: time.Second, Step: 10 * time.Second}
	require.NoError(t, good.Validate())
	bad := PoolConfig{Apps: 0, Tick: 0, Step: time.Millisecond}
	err := bad.Validate()
	require.Error(t, err)
	assert.Equal(t, "--apps 0: must be positive\n--tick 0s: must be positive\n--step 1ms: must be at least 1s\n--addr: an address is required", err.Error())
}

// TestRunPoolChecksFirst: a bad configuration or kubeconfig fails before
// the pool is built.
func TestRunPoolChecksFirst(t *testing.T) {
	pool := func(*calibration.Profile, int, time.Duration, uint64) ([]sim.App, map[string]string, error) {
		t.Fatal("pool built")
		return nil, nil, nil
	}
	log := slog.New(slog.DiscardHandler)
	assert.ErrorContains(t, RunPool(context.Background(), PoolConfig{}, pool, log), "--apps 0")
	cfg := PoolConfig{Kubeconfig: filepath.Join(t.TempDir(), "missing"), Apps: 1, Addr: "127.0.0.1:0", Tick: time.Second, Step: 10 * time.Second}
	assert.ErrorContains(t, RunPool(context.Background(), cfg, pool, log), "--kubeconfig")
}
