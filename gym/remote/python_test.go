package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/localproc"
)

// TestPythonClient runs python/test_aware_env.py (unittest) against a
// server of simulated environments: the Python client's rewards and
// observations for a seed and actions equal the Go client's bit for bit,
// and its errors carry the server's statuses and messages.
func TestPythonClient(t *testing.T) {
	py := clustertest.RequireBinary(t, "python3")
	script, err := filepath.Abs(filepath.Join("python", "test_aware_env.py"))
	require.NoError(t, err)

	s, err := NewServer(map[string]gym.Env{"app": simEnv(t), "fresh": simEnv(t)}, testToken)
	require.NoError(t, err)
	url := serve(t, s)
	p := makePlan(simEnv(t).ActionSpace(), 11, 25)
	planJSON, err := json.Marshal(p)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "trajectory.json")

	proc, err := localproc.Start(py, []string{script},
		localproc.WithDir(t.TempDir()), localproc.WithTail(64<<10),
		localproc.WithEnv(append(os.Environ(),
			"AWARE_ENV_URL="+url,
			"AWARE_ENV_TOKEN="+testToken,
			"AWARE_ENV_NAME=app",
			"AWARE_ENV_FRESH=fresh",
			"AWARE_TEST_PLAN="+string(planJSON),
			"AWARE_TEST_OUT="+out,
			"PYTHONDONTWRITEBYTECODE=1",
		)))
	require.NoError(t, err)
	t.Cleanup(func() {
		if !proc.Exited() {
			_ = proc.Stop(os.Kill, time.Second)
		}
	})
	select {
	case <-proc.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("python tests did not finish within 60 s; output:\n%s", proc.LogTail(64<<10))
	}
	log := proc.LogTail(64 << 10)
	require.NoError(t, proc.Err(), "python tests failed:\n%s", log)
	require.Contains(t, log, "OK")
	require.NotContains(t, log, "skipped 'AWARE_ENV_URL not set", "the server tests ran")
	t.Logf("python:\n%s", log)

	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var got trajectory
	require.NoError(t, json.Unmarshal(b, &got))

	// The Go client on a fresh server, same seed and actions.
	s2, err := NewServer(map[string]gym.Env{"app": simEnv(t)}, testToken)
	require.NoError(t, err)
	c, err := Dial(context.Background(), serve(t, s2), "app", testToken)
	require.NoError(t, err)
	want := drive(t, c, p)
	requireSameTrajectory(t, want, got)
}
