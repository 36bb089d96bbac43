package prometheus_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/infra/prometheus"
)

// start runs Prometheus in a temporary directory, skipping the test when it
// is not installed, except under CI=true where that is a failure.
func start(t *testing.T, opts ...prometheus.Option) *prometheus.Local {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := prometheus.Start(ctx, t.TempDir(), opts...)
	if errors.Is(err, prometheus.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("prometheus not installed; run ci/setup.sh (or apt-get install prometheus): %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, p.Stop())
		if t.Failed() {
			t.Logf("prometheus log:\n%s", localproc.FileTail(p.LogPath(), 8192, 0))
		}
	})
	return p
}

// exporter serves one gauge named name with the given value.
func exporter(t *testing.T, name string, value float64) string {
	t.Helper()
	reg := client.NewRegistry()
	g := client.NewGauge(client.GaugeOpts{Name: name, Help: "test gauge"})
	g.Set(value)
	reg.MustRegister(g)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// query returns the single value of an instant query, failing if there is
// not exactly one series.
func query(ctx context.Context, p *prometheus.Local, q string) (float64, error) {
	v, _, err := p.API().Query(ctx, q, time.Now())
	if err != nil {
		return 0, err
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		return 0, errors.New("not one series: " + v.String())
	}
	return float64(vec[0].Value), nil
}

func TestStartScrapeReloadStop(t *testing.T) {
	t.Parallel()
	first := exporter(t, "aware_test_first", 42)
	p := start(t, prometheus.WithStaticTarget("first", first, "/metrics"))

	assert.True(t, strings.HasPrefix(p.URL(), "http://127.0.0.1:"), p.URL())
	assert.Equal(t, "http://"+p.Addr(), p.URL())
	assert.FileExists(t, p.ConfigPath())
	assert.DirExists(t, filepath.Join(p.Dir(), "data"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	version, err := p.Version(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, version)

	require.NoError(t, p.WaitForTarget(ctx, "first"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, err := query(ctx, p, `aware_test_first{job="first"}`)
		assert.NoError(c, err)
		assert.Equal(c, 42.0, v)
	}, 20*time.Second, 100*time.Millisecond)

	// A target whose address is known only later.
	second := exporter(t, "aware_test_second", 7)
	require.NoError(t, p.SetStaticTarget("second", second, ""))
	require.NoError(t, p.Reload(ctx))
	cfg, err := os.ReadFile(p.ConfigPath())
	require.NoError(t, err)
	assert.Contains(t, string(cfg), second)
	require.NoError(t, p.WaitForTarget(ctx, "second"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, err := query(ctx, p, `aware_test_second{job="second"}`)
		assert.NoError(c, err)
		assert.Equal(c, 7.0, v)
	}, 20*time.Second, 100*time.Millisecond)

	// Removing the first job drops its target.
	require.True(t, p.RemoveStaticJob("first"))
	require.NoError(t, p.Reload(ctx))
	require.Eventually(t, func() bool {
		res, err := p.API().Targets(ctx)
		if err != nil {
			return false
		}
		for _, tg := range res.Active {
			if tg.ScrapePool == "first" {
				return false
			}
		}
		return true
	}, 20*time.Second, 100*time.Millisecond)

	require.NoError(t, p.Stop())
	require.NoError(t, p.Stop(), "Stop is idempotent")
	_, err = http.Get(p.URL() + "/-/ready")
	assert.Error(t, err, "the server is gone")

	// Restarted on the same address, with the data from before the stop.
	url := p.URL()
	require.NoError(t, p.Restart(ctx))
	assert.Equal(t, url, p.URL())
	v, err := query(ctx, p, `max_over_time(aware_test_second{job="second"}[1h])`)
	require.NoError(t, err)
	assert.Equal(t, 7.0, v, "the TSDB survives")
	require.NoError(t, p.Stop())
}

func TestWaitForTargetDown(t *testing.T) {
	t.Parallel()
	dead, err := localproc.FreeLoopbackAddr() // nothing listens there
	require.NoError(t, err)
	p := start(t, prometheus.WithStaticTarget("dead", dead, ""), prometheus.WithScrapeInterval(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Prometheus' discovery hands new targets to the scrapers every 5s.
	require.Eventually(t, func() bool {
		res, err := p.API().Targets(ctx)
		return err == nil && len(res.Active) == 1 && res.Active[0].Health == "down"
	}, 20*time.Second, 100*time.Millisecond)
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	err = p.WaitForTarget(short, "dead")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, `job "dead" not up`)
	assert.ErrorContains(t, err, "http://"+dead+"/metrics down")
	assert.ErrorContains(t, err, "connection refused")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	assert.ErrorContains(t, p.WaitForTarget(ctx2, "nosuchjob"), "no active target")
}

func TestStartRejectedConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := prometheus.Start(ctx, t.TempDir(),
		prometheus.WithScrapeConfigYAML("- job_name: bad\n  no_such_field: 1\n"))
	if errors.Is(err, prometheus.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("prometheus not installed: %v", err)
	}
	require.ErrorIs(t, err, localproc.ErrExited)
	assert.ErrorContains(t, err, "no_such_field", "the error quotes Prometheus' complaint")
}

func TestNoBinary(t *testing.T) {
	_, err := prometheus.Start(context.Background(), t.TempDir(),
		prometheus.WithBinary(filepath.Join(t.TempDir(), "prometheus")))
	require.ErrorIs(t, err, prometheus.ErrNoBinary)
}

func TestStartBadOptions(t *testing.T) {
	_, err := prometheus.Start(context.Background(), t.TempDir(), prometheus.WithStaticTarget("x", "bad", ""))
	assert.ErrorContains(t, err, `local Prometheus: static target of job "x": address "bad" is not host:port`)
}
