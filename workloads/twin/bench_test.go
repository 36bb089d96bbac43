package twin

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// generatedCluster is n apps of the generated pool (synthetic load shapes
// at a 10 s step) and the objects a cluster would hold for them: the
// generator's Deployments and podsPer Running pods each, built from the
// pod template with their resources in the status, as kwok reports them.
func generatedCluster(tb testing.TB, prof *calibration.Profile, n, podsPer int) ([]sim.App, []kruntime.Object) {
	tb.Helper()
	opts := generator.DefaultOptions()
	opts.Apps = n
	gen, err := generator.Generate(opts, prof)
	if err != nil {
		tb.Fatal(err)
	}
	shapes, err := generator.LoadShapes("", 10*time.Second, 1)
	if err != nil {
		tb.Fatal(err)
	}
	apps, err := generator.SimApps(gen, shapes)
	if err != nil {
		tb.Fatal(err)
	}
	var objs []kruntime.Object
	for _, a := range gen {
		o, err := generator.Build(a, generator.ManifestOptions{Namespace: testNS})
		if err != nil {
			tb.Fatal(err)
		}
		d := o.Deployment
		d.UID = types.UID("deploy-" + d.Name)
		objs = append(objs, d)
		for k := range podsPer {
			tmpl := d.Spec.Template
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", d.Name, k), Namespace: testNS,
					UID: types.UID(fmt.Sprintf("pod-%s-%d", d.Name, k)), Labels: tmpl.Labels, Annotations: tmpl.Annotations},
				Spec: *tmpl.Spec.DeepCopy(),
				Status: corev1.PodStatus{
					Phase:      corev1.PodRunning,
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				},
			}
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Ready: true, Resources: c.Resources.DeepCopy(),
				})
			}
			objs = append(objs, p)
		}
	}
	return apps, objs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTwin measures a tick (reading the caches, stepping every
// application, building the snapshot) and a scrape of the endpoint for
// the generated pool at three pods per application, on fake informer
// data. cpu-ms/op is the process CPU time per operation over all cores
// (the target for a tick is well under the 1 s tick); heap-MB is what the
// twin adds to the heap once it has ticked: informer caches, simulators,
// counters and snapshot (the fake clientset's own objects excluded).
func BenchmarkTwin(b *testing.B) {
	prof := testProfile(b)
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("apps=%d/pods=%d", n, 3*n), func(b *testing.B) {
			apps, objs := generatedCluster(b, prof, n, 3)
			client := fake.NewClientset(objs...)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			tw, clk := startTwin(b, client, apps, WithWorkers(runtime.GOMAXPROCS(0)))
			ctx := context.Background()
			if err := tw.Tick(ctx); err != nil {
				b.Fatal(err)
			}
			if st := tw.Status(); len(st) != n || len(st[n-1].Pods) != 3 {
				b.Fatalf("tracked %d apps, want %d with 3 pods", len(st), n)
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap := float64(ms.HeapAlloc-before) / (1 << 20)

			b.Run("tick", func(b *testing.B) {
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					clk.advance(time.Second)
					if err := tw.Tick(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(heap, "heap-MB")
			})
			b.Run("scrape", func(b *testing.B) {
				b.ReportAllocs()
				h := tw.Handler()
				var size int
				cpu := cpuTime()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
					if rec.Code != 200 {
						b.Fatal(rec.Code)
					}
					size = rec.Body.Len()
					_, _ = io.Copy(io.Discard, rec.Body)
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(size)/(1<<20), "MB/scrape")
			})
		})
	}
}
