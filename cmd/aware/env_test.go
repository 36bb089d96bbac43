package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym/remote"
)

// TestEnvServeRefusesBadFlags: `aware env serve` names each bad flag before
// it builds or serves anything.
func TestEnvServeRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("tok\n"), 0o600))
	none := "--traces=" + filepath.Join(dir, "none")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--apps", "2", "--app", "app-0001"}, "--apps and --app are exclusive"},
		{[]string{"serve", "--cluster", "--apps", "2"}, "--apps selects simulated applications; with --cluster, select MPAs with --namespace and --mpa"},
		{[]string{"serve", "--prometheus", "http://127.0.0.1:9090"}, "--prometheus needs --cluster"},
		{[]string{"serve", "--mpa", "app-0001"}, "--mpa needs --cluster"},
		{[]string{"serve"}, "--token-file is required"},
		{[]string{"serve", "--insecure", "--addr", "0.0.0.0:7777"}, "only on a loopback address; --addr is 0.0.0.0:7777"},
		{[]string{"serve", "--token-file", good, "--apps", "0", none}, "--apps 0"},
		{[]string{"serve", "--token-file", good, "--app", "frontend", none}, `--app "frontend"`},
		{[]string{"serve", "--token-file", good, "--app", "app-0002", "--app", "app-0002", none}, "--app app-0002 is given twice"},
		{[]string{"serve", "--token-file", good, "--episode", "0", none}, "--episode 0"},
		{[]string{"serve", "--token-file", good, "--cluster"}, "--prometheus: a Prometheus URL is required with --cluster"},
		{[]string{"serve", "--token-file", good, "--cluster", "--prometheus", "http://127.0.0.1:9", "--step", "0s"}, "--step 0s: must be positive"},
	} {
		cmd := newEnvCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// lineWriter sends what is written to it on a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

// TestEnvServe serves two named applications of the pool with synthetic
// load (the traces folder is absent) and drives one with the Go client.
func TestEnvServe(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokFile, []byte("a-long-test-token\n"), 0o600))
	out := make(lineWriter, 1)
	cmd := newEnvCmd()
	cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--token-file", tokFile, "--app", "app-0003", "--app", "app-0001",
		"--traces", filepath.Join(dir, "no-traces"), "--episode", "5", "--metrics"})
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30 s")
	}
	m := regexp.MustCompile(`^serving 2 environment\(s\) \(app-0001, app-0003\) on (http://[^/]+)/v1/envs\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	url := m[1]
	names, err := remote.List(ctx, url, "a-long-test-token")
	require.NoError(t, err)
	assert.Equal(t, []string{"app-0001", "app-0003"}, names)

	c, err := remote.Dial(ctx, url, "app-0003", "a-long-test-token")
	require.NoError(t, err)
	obs, _, err := c.Reset(ctx, 4)
	require.NoError(t, err)
	assert.Len(t, obs, c.ObservationSpace().Dim())
	truncated := 0
	for range 10 {
		_, r, _, trunc, info, err := c.Step(ctx, []float64{2, 0.5, 1 << 30})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, r, 0.0)
		assert.Equal(t, 2, info.Metrics.Replicas)
		if trunc {
			truncated++
		}
	}
	assert.Equal(t, 2, truncated, "--episode 5")
	_, err = remote.Dial(ctx, url, "app-0003", "wrong")
	assert.Equal(t, http.StatusUnauthorized, remote.StatusOf(err))

	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `aware_env_requests_total{code="200",env="app-0003",op="step"} 10`)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}
