package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPrometheusScrapesServer runs the server with a real application and a
// real Prometheus scraping it every second, and checks through the
// Prometheus query API that every request was counted.
func TestPrometheusScrapesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	promBin := clustertest.RequireBinary(t, "prometheus")

	spec := app.Spec{APIVersion: app.SpecVersion, Kind: "App", Name: "itest", Seed: 1,
		Segments: []segments.Spec{{Name: "sleep", Size: 1}}}
	require.NoError(t, spec.Validate())
	s, base, cancel, errc := startRun(t, Config{App: spec.Name}, ChainSetup(spec, segments.Env{Dir: t.TempDir()}))
	<-s.Ready()

	dir := t.TempDir()
	promPort := freePort(t)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: aware-workload
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs:
      - targets: [%q]
`, base[len("http://"):])
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	var promOut syncBuffer
	cmd := exec.Command(promBin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort),
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = &promOut, &promOut
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", promOut.String())
		}
	})

	const sent = 25
	for i := range sent {
		status, _ := do(t, http.MethodPost, base+"/invoke")
		require.Equal(t, 200, status, "request %d", i)
	}

	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	query := `aware_workload_requests_processed_total{app="itest",job="aware-workload"}`
	want := strconv.Itoa(sent)
	for deadline, last := time.Now().Add(60*time.Second), ""; ; time.Sleep(250 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited early: %v", err)
		default:
		}
		v, err := promQuery(promURL, query)
		if err == nil && v == want {
			break
		}
		last = v
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus never saw %d processed requests (last: %s)", sent, last)
		}
	}

	v, err := promQuery(promURL, `up{job="aware-workload"}`)
	require.NoError(t, err)
	assert.Equal(t, "1", v)
	v, err = promQuery(promURL, `aware_workload_request_duration_seconds_count{app="itest"}`)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(sent), v)

	cancel()
	require.NoError(t, waitErr(t, errc))
}

// promQuery runs an instant query and returns the single sample's value.
func promQuery(base, q string) (string, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("decode query response: %w", err)
	}
	if body.Status != "success" {
		return "", fmt.Errorf("query %s: %s", q, body.Error)
	}
	if len(body.Data.Result) != 1 {
		return "", fmt.Errorf("query %s: %d series, want 1", q, len(body.Data.Result))
	}
	s, ok := body.Data.Result[0].Value[1].(string)
	if !ok {
		return "", fmt.Errorf("query %s: value %v is not a string", q, body.Data.Result[0].Value[1])
	}
	return s, nil
}
