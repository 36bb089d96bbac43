package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym/remote"
)

func TestEnvServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("tok\n"), 0o600))
	base := envServeConfig{addr: "127.0.0.1:0", apps: 1, poolSeed: 1, traces: filepath.Join(dir, "none"), step: 30 * time.Second, episode: 100, seed: 1}
	for _, tc := range []struct {
		name string
		edit func(*envServeConfig)
		want string
	}{
		{"no token", func(c *envServeConfig) {}, "--token-file is required"},
		{"insecure off loopback", func(c *envServeConfig) { c.insecure, c.addr = true, "0.0.0.0:7777" }, "only on a loopback address; --addr is 0.0.0.0:7777"},
		{"insecure and token", func(c *envServeConfig) { c.insecure, c.tokenFile = true, good }, "exclusive"},
		{"missing token file", func(c *envServeConfig) { c.tokenFile = filepath.Join(dir, "nope") }, "token file"},
		{"empty token file", func(c *envServeConfig) { c.tokenFile = empty }, "token file " + empty + ": the token is empty"},
		{"no apps", func(c *envServeConfig) { c.tokenFile, c.apps = good, 0 }, "--apps 0"},
		{"bad app name", func(c *envServeConfig) { c.tokenFile, c.names = good, []string{"frontend"} }, `--app "frontend"`},
		{"app twice", func(c *envServeConfig) { c.tokenFile, c.names = good, []string{"app-0002", "app-0002"} }, "--app app-0002 is given twice"},
		{"bad episode", func(c *envServeConfig) { c.tokenFile, c.episode = good, 0 }, "--episode 0"},
		{"cluster without prometheus", func(c *envServeConfig) { c.tokenFile, c.cluster = good, true }, "--prometheus: a Prometheus URL is required with --cluster"},
		{"cluster bad step", func(c *envServeConfig) {
			c.tokenFile, c.cluster, c.prometheus, c.step = good, true, "http://127.0.0.1:9", 0
		}, "--step 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.run(context.Background(), io.Discard, slog.New(slog.DiscardHandler))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	cmd := newEnvCmd()
	cmd.SetArgs([]string{"serve", "--apps", "2", "--app", "app-0001"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	assert.ErrorContains(t, cmd.Execute(), "--apps and --app are exclusive")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--cluster", "--apps", "2"}, "--apps selects simulated applications; with --cluster, select MPAs with --namespace and --mpa"},
		{[]string{"serve", "--prometheus", "http://127.0.0.1:9090"}, "--prometheus needs --cluster"},
		{[]string{"serve", "--mpa", "app-0001"}, "--mpa needs --cluster"},
	} {
		cmd := newEnvCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// TestEnvServe serves two named applications of the pool with synthetic
// load (the traces folder is absent) and drives one with the Go client.
func TestEnvServe(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokFile, []byte("a-long-test-token\n"), 0o600))
	addrs := make(chan string, 1)
	cfg := envServeConfig{addr: "127.0.0.1:0", tokenFile: tokFile, names: []string{"app-0003", "app-0001"}, poolSeed: 1,
		traces: filepath.Join(dir, "no-traces"), step: 30 * time.Second, episode: 5, seed: 1, metrics: true,
		listening: func(a string) { addrs <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- cfg.run(ctx, &out, slog.New(slog.DiscardHandler)) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30 s")
	}
	url := "http://" + addr
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
	assert.Contains(t, out.String(), "serving 2 environment(s) (app-0001, app-0003) on http://"+addr+"/v1/envs")
}
