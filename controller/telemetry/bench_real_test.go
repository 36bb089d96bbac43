package telemetry_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/infra/localproc"
	promlocal "github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/workloads/server"
)

// clusterExporter writes the text exposition of the metric contract for
// apps×perApp pods, counters growing linearly from start.
func clusterExporter(apps, perApp int, start time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		el := time.Since(start).Seconds()
		bw := bufio.NewWriterSize(w, 1<<16)
		defer bw.Flush()
		for a := range apps {
			for i := range perApp {
				pod := fmt.Sprintf("app-%04d-7c9f8b6d5-%05d", a, i)
				ns := fmt.Sprintf("ns-%02d", a%50)
				c := fmt.Sprintf(`namespace="%s",pod="%s",container="app"`, ns, pod)
				p := fmt.Sprintf(`namespace="%s",pod="%s"`, ns, pod)
				fmt.Fprintf(bw, "container_cpu_usage_seconds_total{%s} %g\n", c, 0.25*el)
				fmt.Fprintf(bw, "container_memory_working_set_bytes{%s} %d\n", c, 100<<20)
				fmt.Fprintf(bw, "container_fs_reads_bytes_total{%s,device=\"/dev/vda\"} %g\n", c, 1000*el)
				fmt.Fprintf(bw, "container_fs_writes_bytes_total{%s,device=\"/dev/vda\"} %g\n", c, 500*el)
				fmt.Fprintf(bw, "container_oom_events_total{%s} 0\n", c)
				fmt.Fprintf(bw, "container_network_receive_bytes_total{%s,interface=\"eth0\"} %g\n", p, 2000*el)
				fmt.Fprintf(bw, "container_network_transmit_bytes_total{%s,interface=\"eth0\"} %g\n", p, 1000*el)
				fmt.Fprintf(bw, "kube_pod_container_resource_limits{%s,resource=\"cpu\",unit=\"core\"} 1\n", c)
				fmt.Fprintf(bw, "kube_pod_container_resource_limits{%s,resource=\"memory\",unit=\"byte\"} %d\n", c, 512<<20)
				fmt.Fprintf(bw, "kube_pod_status_ready{%s,condition=\"true\"} 1\n", p)
				fmt.Fprintf(bw, "aware_workload_requests_received_total{%s} %g\n", p, 10*el)
				fmt.Fprintf(bw, "aware_workload_requests_processed_total{%s} %g\n", p, 10*el)
				fmt.Fprintf(bw, "aware_workload_requests_failed_total{%s,reason=\"error\"} 0\n", p)
				for j, ub := range server.DurationBuckets {
					n := 0.0
					if j >= 4 {
						n = 10 * el
					}
					fmt.Fprintf(bw, "aware_workload_request_duration_seconds_bucket{%s,le=\"%g\"} %g\n", p, ub, n)
				}
				fmt.Fprintf(bw, "aware_workload_request_duration_seconds_bucket{%s,le=\"+Inf\"} %g\n", p, 10*el)
			}
		}
	})
}

// BenchmarkSnapshotRealPrometheus measures a control round of 1000
// applications of 3 pods against the real Prometheus (about 100 000
// series scraped every 2s): the 13 queries' evaluation in Prometheus, the
// transfer, decoding and aggregation.
func BenchmarkSnapshotRealPrometheus(b *testing.B) {
	const apps, perApp, window = 1000, 3, 10 * time.Second
	srv := httptest.NewServer(clusterExporter(apps, perApp, time.Now()))
	b.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prom, err := promlocal.Start(ctx, b.TempDir(), promlocal.WithScrapeInterval(2*time.Second),
		promlocal.WithStaticTarget("cluster", strings.TrimPrefix(srv.URL, "http://"), ""))
	if errors.Is(err, promlocal.ErrNoBinary) && os.Getenv("CI") != "true" {
		b.Skipf("prometheus not installed: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := prom.Stop(); err != nil {
			b.Error(err)
		}
	})
	if err := prom.WaitForTarget(ctx, "cluster"); err != nil {
		b.Fatalf("%v\n%s", err, localproc.FileTail(prom.LogPath(), 4096, 0))
	}
	time.Sleep(window + 3*time.Second)
	src, err := telemetry.New(prom.URL(), telemetry.WithMaxAge(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]telemetry.PodKey, apps)
	for a := range apps {
		for i := range perApp {
			keys[a] = append(keys[a], telemetry.PodKey{Namespace: fmt.Sprintf("ns-%02d", a%50), Pod: fmt.Sprintf("app-%04d-7c9f8b6d5-%05d", a, i)})
		}
	}
	b.ReportAllocs()
	series := 0
	for b.Loop() {
		snap, err := src.Snapshot(ctx, window, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		series = 0
		for _, q := range snap.Queries {
			series += q.Series
		}
		for _, k := range keys {
			if _, err := snap.Aggregate(k, "app"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(series), "series/op")
	var means []string
	for _, st := range src.Stats() {
		means = append(means, fmt.Sprintf("%s %v", st.Name, st.Mean().Round(time.Millisecond)))
	}
	b.Logf("mean query latency: %s", strings.Join(means, ", "))
}
