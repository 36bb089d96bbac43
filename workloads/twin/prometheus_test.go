package twin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// TestPrometheusReadsSimulatedRates has a real Prometheus scrape the twin
// of an application in a steady state and checks, through its query API,
// that rate() of the counters gives the simulator's per-second usage and
// request rates in wall-clock time, that the working sets sum to the
// simulated memory, and that histogram_quantile gives the simulated
// latency quantiles within their buckets.
func TestPrometheusReadsSimulatedRates(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	promBin := clustertest.RequireBinary(t, "prometheus")

	app := testApp("a", 220)
	app.Noise = 0
	app.Load.Shape = []float64{1} // a steady state after a few steps
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2"))
	twinAddr, err := localproc.FreeLoopbackAddr()
	require.NoError(t, err)
	tw, err := New(client, []sim.App{app}, testProfile(t), WithAddr(twinAddr), WithTick(100*time.Millisecond))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tw.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		assert.NoError(t, <-done)
	})

	dir := t.TempDir()
	promAddr, err := localproc.FreeLoopbackAddr()
	require.NoError(t, err)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: aware-twin
    honor_labels: true
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs:
      - targets: [%q]
`, twinAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	prom, err := localproc.Start(promBin, []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + promAddr,
		"--log.level=warn",
	}, localproc.WithTail(64<<10), localproc.WithDeathSignal(syscall.SIGKILL))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = prom.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("prometheus output:\n%s", prom.LogTail(64<<10))
		}
	})
	promURL := "http://" + promAddr
	require.NoError(t, prom.WaitReady(ctx, 30*time.Second, 100*time.Millisecond, localproc.HTTPProbe(http.DefaultClient, promURL+"/-/ready", 200)))
	pc, err := api.NewClient(api.Config{Address: promURL})
	require.NoError(t, err)
	papi := promv1.NewAPI(pc)
	query := func(q string) (float64, error) {
		v, _, err := papi.Query(ctx, q, time.Now())
		if err != nil {
			return 0, err
		}
		vec, ok := v.(model.Vector)
		if !ok || len(vec) != 1 {
			return 0, fmt.Errorf("%s: want one sample, got %v", q, v)
		}
		return float64(vec[0].Value), nil
	}

	// Wait for a steady state and for the rate window to fill with it.
	var m = tw.Status()
	require.Eventually(t, func() bool {
		m = tw.Status()
		return len(m) == 1 && m[0].Advanced && testutil.ToFloat64(tw.own.ticks) > 5
	}, 10*time.Second, 50*time.Millisecond)
	steady := m[0].Metrics
	// Counters step at ticks while Prometheus stamps samples at scrape
	// time, so a rate over a window is off by up to a tick's growth at
	// each end: a few per cent at 100 ms ticks over 6 s, more when a
	// loaded machine delays ticks. Ratios of counters scraped together do
	// not depend on that timing and must match closely.
	const window = "[6s]"
	require.Eventually(t, func() bool {
		n, err := query(`count_over_time(aware_workload_requests_processed_total{pod="a-1"}` + window + `)`)
		return err == nil && n >= 6
	}, 30*time.Second, 250*time.Millisecond, "six scrapes in the window")
	require.Equal(t, steady, tw.Status()[0].Metrics, "the application is in a steady state")

	rate := func(metric string) string { return `sum(rate(` + metric + window + `))` }
	for _, tc := range []struct {
		q    string
		want float64
		rel  float64
	}{
		{rate(`container_cpu_usage_seconds_total{namespace="apps",container="workload"}`), steady.CPUUsage, 0.1},
		{rate(`aware_workload_requests_processed_total`), steady.ProcessedRate, 0.1},
		{rate(`container_fs_reads_bytes_total`) + " + " + rate(`container_fs_writes_bytes_total`), steady.IORate, 0.1},
		{rate(`container_cpu_usage_seconds_total`) + " / " + rate(`aware_workload_requests_processed_total`), steady.CPUUsage / steady.ProcessedRate, 1e-3},
		{rate(`aware_workload_requests_received_total`) + " / " + rate(`aware_workload_requests_processed_total`), steady.ArrivalRate / steady.ProcessedRate, 1e-3},
		{"(" + rate(`container_network_receive_bytes_total`) + " + " + rate(`container_network_transmit_bytes_total`) + ") / " +
			rate(`aware_workload_requests_processed_total`), steady.NetRate / steady.ProcessedRate, 1e-3},
		{rate(`aware_workload_request_duration_seconds_count`) + " / " + rate(`aware_workload_requests_processed_total`), 1, 0.01},
		{`sum(container_memory_working_set_bytes)`, steady.MemoryUsage, 1e-6},
		{`sum(kube_pod_container_resource_limits{resource="cpu",unit="core"})`, 2, 1e-9},
		{`sum(kube_pod_status_ready{condition="true"})`, 2, 1e-9},
	} {
		got, err := query(tc.q)
		require.NoError(t, err)
		assert.InEpsilon(t, tc.want, got, tc.rel, tc.q)
		t.Logf("%s = %.6g (simulated %.6g)", tc.q, got, tc.want)
	}
	for i, want := range []float64{steady.LatencyP50, steady.LatencyP95, steady.LatencyP99} {
		q := fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(aware_workload_request_duration_seconds_bucket%s)))`, latencyLevels[i], window)
		got, err := query(q)
		require.NoError(t, err)
		assert.InDelta(t, want, got, bucketWidth(server.DurationBuckets, want), q)
		t.Logf("%s = %.4f s (simulated %.4f s)", q, got, want)
	}
}
