package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/objstore"
)

func TestRequestCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	mk := func(name string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{"reason"})
		reg.MustRegister(c)
		return c
	}
	mk("aware_workload_requests_received_total").WithLabelValues("").Add(5)
	mk("aware_workload_requests_processed_total").WithLabelValues("").Add(3)
	failed := mk("aware_workload_requests_failed_total")
	failed.WithLabelValues("error").Add(1)
	failed.WithLabelValues("overload").Add(1)
	r, p, f, err := RequestCounters(reg)
	require.NoError(t, err)
	assert.Equal(t, []float64{5, 3, 2}, []float64{r, p, f})

	_, _, _, err = RequestCounters(prometheus.NewRegistry())
	assert.ErrorContains(t, err, "request counters missing")
}

// TestServeApp serves the light example app, invokes it once and reads the
// server's own counters, then shuts it down.
func TestServeApp(t *testing.T) {
	addr, err := FreeLoopbackAddr()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "scratch")
	cfg := AppConfig{AppFile: filepath.Join("..", "app", "examples", "light.yaml"), Dir: dir, Server: Config{Addr: addr}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeApp(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	url := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)
	resp, err := http.Post(url+"/invoke", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get(url + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `aware_workload_requests_processed_total{app="light"} 1`)
	st, err := os.Stat(dir)
	require.NoError(t, err, "--dir is created")
	assert.True(t, st.IsDir())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestServeAppErrors(t *testing.T) {
	t.Setenv("AWARE_DATABASE_URL", "")
	mixed := filepath.Join("..", "app", "examples", "mixed.yaml")
	objects := filepath.Join(t.TempDir(), "objects.yaml")
	require.NoError(t, os.WriteFile(objects, []byte("apiVersion: aware.dev/v1alpha1\nkind: App\nname: obj\nsegments:\n  - name: objectRead\n    size: 1024\n"), 0o600))
	for _, tc := range []struct {
		name string
		cfg  AppConfig
		want string
	}{
		{"missing spec", AppConfig{AppFile: "/nonexistent.yaml"}, "read app spec"},
		{"database needed", AppConfig{AppFile: mixed}, "app mixed (" + mixed + ") needs a database: set --database-url or AWARE_DATABASE_URL"},
		{"object store needed", AppConfig{AppFile: objects, S3: objstore.Config{}}, "needs an object store: set --s3-endpoint"},
		{"bad config", AppConfig{AppFile: filepath.Join("..", "app", "examples", "light.yaml"), Server: Config{Addr: "nowhere"}}, "addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, ServeApp(context.Background(), tc.cfg, slog.New(slog.DiscardHandler)), tc.want)
		})
	}
}
