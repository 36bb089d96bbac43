package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// TestListenConfigErrors: every bad listen configuration is refused before
// the environments are built, naming the flag.
func TestListenConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("tok\n"), 0o600))
	built := errors.New("environments built")
	envs := func(context.Context) (map[string]gym.Env, error) { return nil, built }
	for _, tc := range []struct {
		name string
		cfg  ListenConfig
		want string
	}{
		{"no token", ListenConfig{Addr: "127.0.0.1:0"}, "--token-file is required"},
		{"insecure off loopback", ListenConfig{Addr: "0.0.0.0:7777", Insecure: true}, "only on a loopback address; --addr is 0.0.0.0:7777"},
		{"insecure bad addr", ListenConfig{Addr: "nowhere", Insecure: true}, `--addr "nowhere"`},
		{"insecure and token", ListenConfig{Addr: "127.0.0.1:0", Insecure: true, TokenFile: good}, "exclusive"},
		{"missing token file", ListenConfig{Addr: "127.0.0.1:0", TokenFile: filepath.Join(dir, "nope")}, "token file"},
		{"empty token file", ListenConfig{Addr: "127.0.0.1:0", TokenFile: empty}, "token file " + empty + ": the token is empty"},
		{"token checked, then envs", ListenConfig{Addr: "127.0.0.1:0", TokenFile: good}, "environments built"},
		{"insecure on loopback, then envs", ListenConfig{Addr: "localhost:0", Insecure: true}, "environments built"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ListenAndServe(context.Background(), tc.cfg, envs, io.Discard, slog.New(slog.DiscardHandler))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestListenAndServe serves two fake environments with metrics and drives
// one with the Go client until the context ends.
func TestListenAndServe(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokFile, []byte("a-long-test-token\n"), 0o600))
	addrs := make(chan string, 1)
	cfg := ListenConfig{Addr: "127.0.0.1:0", TokenFile: tokFile, Metrics: true, Listening: func(a string) { addrs <- a }}
	envs := func(context.Context) (map[string]gym.Env, error) {
		return map[string]gym.Env{"b": &fakeEnv{}, "a": constEnv{}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, cfg, envs, &out, slog.New(slog.DiscardHandler)) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30 s")
	}
	url := "http://" + addr
	names, err := List(ctx, url, "a-long-test-token")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names)
	c, err := Dial(ctx, url, "b", "a-long-test-token")
	require.NoError(t, err)
	_, _, err = c.Reset(ctx, 4)
	require.NoError(t, err)
	for range 3 {
		_, _, _, _, _, err := c.Step(ctx, []float64{2, 0.5, 1 << 30})
		require.NoError(t, err)
	}
	_, err = Dial(ctx, url, "b", "wrong")
	assert.Equal(t, http.StatusUnauthorized, StatusOf(err))

	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `aware_env_requests_total{code="200",env="b",op="step"} 3`)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Equal(t, "serving 2 environment(s) (a, b) on http://"+addr+"/v1/envs\n", out.String())
}
