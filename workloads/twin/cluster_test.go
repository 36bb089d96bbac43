package twin

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/localproc"
)

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// runningPods lists the Running pods of app in ns.
func runningPods(ctx context.Context, client kubernetes.Interface, ns, app string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelName + "=" + app})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestTwinOnLocalCluster runs two generated applications' Deployments on
// the local control plane (kwok nodes), runs the twin against it and reads
// its endpoint: every Running pod gets its series, a scale-up adds pods to
// the split and an in-place resize through pods/resize shows up in the
// exported limits and the simulated allocation.
func TestTwinOnLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Up(ctx, cluster.Config{Dir: t.TempDir(), Binaries: bins, Nodes: 1, Log: logWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Down(context.Background())) })
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)

	// Two generated applications, as `aware generate --manifests` renders
	// them (the kwok node is amd64, so every node class maps there).
	const ns = "twin-it"
	prof := testProfile(t)
	opts := generator.DefaultOptions()
	opts.Apps = 2
	gen, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	shapes, err := generator.LoadShapes("", 10*time.Second, 1)
	require.NoError(t, err)
	apps, err := generator.SimApps(gen, shapes)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	mo := generator.ManifestOptions{Namespace: ns, NodeArch: map[string]string{generator.NodeX86: "amd64", generator.NodePower: "amd64"}}
	for _, a := range gen {
		o, err := generator.Build(a, mo)
		require.NoError(t, err)
		_, err = client.AppsV1().Deployments(ns).Create(ctx, o.Deployment, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	want := map[string]int{}
	for _, a := range gen {
		want[a.Name()] = a.Initial.Replicas
	}
	waitPods := func(app string, n int) []corev1.Pod {
		var pods []corev1.Pod
		require.Eventually(t, func() bool {
			pods, err = runningPods(ctx, client, ns, app)
			return err == nil && len(pods) == n
		}, 60*time.Second, 200*time.Millisecond, "%d Running pods of %s", n, app)
		return pods
	}
	for app, n := range want {
		waitPods(app, n)
	}

	addr, err := localproc.FreeLoopbackAddr()
	require.NoError(t, err)
	tw, err := New(client, apps, prof, WithNamespace(ns), WithAddr(addr), WithTick(300*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(logWriter{t}, nil))))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tw.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the twin did not stop")
		}
	})

	url := "http://" + addr + "/metrics"
	var fams map[string]*dto.MetricFamily
	// served waits until the endpoint shows, for every Running pod of
	// every application, its usage and limits, after cond holds.
	served := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			if fams, err = httpScrape(url); err != nil {
				return false
			}
			for app := range want {
				pods, err := runningPods(ctx, client, ns, app)
				if err != nil || len(pods) != want[app] {
					return false
				}
				for _, p := range pods {
					sel := map[string]string{"namespace": ns, "pod": p.Name}
					if len(series(fams, "container_cpu_usage_seconds_total", sel)) != 1 ||
						len(series(fams, "kube_pod_container_resource_limits", sel)) != 2 ||
						len(series(fams, "aware_workload_request_duration_seconds", sel)) != 1 {
						return false
					}
				}
				if n := len(podNames(fams, "container_cpu_usage_seconds_total")); n != total(want) {
					return false
				}
			}
			return cond()
		}, 20*time.Second, 100*time.Millisecond, what)
	}
	served("every pod's series", func() bool { return len(tw.Status()) == 2 })
	for app := range want {
		pods, err := runningPods(ctx, client, ns, app)
		require.NoError(t, err)
		for _, p := range pods {
			sel := map[string]string{"namespace": ns, "pod": p.Name, "container": DefaultContainer}
			lim := p.Spec.Containers[0].Resources.Limits
			assert.InDelta(t, lim.Cpu().AsApproximateFloat64(), value(t, fams, "kube_pod_container_resource_limits",
				map[string]string{"pod": p.Name, "resource": "cpu", "unit": "core"}), 1e-9)
			assert.InDelta(t, lim.Memory().AsApproximateFloat64(), value(t, fams, "kube_pod_container_resource_limits",
				map[string]string{"pod": p.Name, "resource": "memory", "unit": "byte"}), 1)
			assert.Equal(t, 1.0, value(t, fams, "kube_pod_status_ready", map[string]string{"pod": p.Name, "condition": "true"}))
			for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"} {
				assert.Positive(t, value(t, fams, name, sel), "%s of %s", name, p.Name)
			}
			for _, name := range []string{"container_fs_reads_bytes_total", "container_fs_writes_bytes_total", "container_oom_events_total"} {
				assert.Len(t, series(fams, name, sel), 1, name)
			}
			for _, name := range []string{"container_network_receive_bytes_total", "container_network_transmit_bytes_total",
				"aware_workload_requests_received_total", "aware_workload_requests_processed_total", "aware_workload_requests_failed_total"} {
				assert.Len(t, series(fams, name, map[string]string{"namespace": ns, "pod": p.Name}), 1, name)
			}
		}
	}

	// Scale the first application up by one through the scale subresource.
	scaled := gen[0].Name()
	sc, err := client.AppsV1().Deployments(ns).GetScale(ctx, scaled, metav1.GetOptions{})
	require.NoError(t, err)
	sc.Spec.Replicas++
	_, err = client.AppsV1().Deployments(ns).UpdateScale(ctx, scaled, sc, metav1.UpdateOptions{})
	require.NoError(t, err)
	want[scaled]++
	waitPods(scaled, want[scaled])
	served("the scaled application's new pod", func() bool {
		for _, st := range tw.Status() {
			if st.App == scaled {
				return st.Allocation.Replicas == want[scaled] && st.Metrics.Replicas == want[scaled]
			}
		}
		return false
	})

	// Resize one pod of the second application in place.
	resized := gen[1].Name()
	pods := waitPods(resized, want[resized])
	p := pods[0].DeepCopy()
	oldCPU := p.Spec.Containers[0].Resources.Limits.Cpu().AsApproximateFloat64()
	newCPU := 0.75
	if oldCPU == newCPU {
		newCPU = 1.25
	}
	q := *resource.NewMilliQuantity(int64(newCPU*1000), resource.DecimalSI)
	p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = q
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
	_, err = client.CoreV1().Pods(ns).UpdateResize(ctx, p.Name, p, metav1.UpdateOptions{})
	require.NoError(t, err, "pods/resize")
	wantMean := (newCPU + float64(want[resized]-1)*oldCPU) / float64(want[resized])
	served("the resized limit", func() bool {
		if len(series(fams, "kube_pod_container_resource_limits", map[string]string{"pod": p.Name, "resource": "cpu"})) != 1 {
			return false
		}
		if v := value(t, fams, "kube_pod_container_resource_limits", map[string]string{"pod": p.Name, "resource": "cpu"}); v != newCPU {
			return false
		}
		for _, st := range tw.Status() {
			if st.App == resized {
				return st.Allocation.CPU > wantMean-1e-9 && st.Allocation.CPU < wantMean+1e-9
			}
		}
		return false
	})
	ticks := value(t, fams, "aware_twin_ticks_total", nil)
	t.Logf("%.0f ticks; allocations: %+v", ticks, statusSummary(tw.Status()))
	assert.GreaterOrEqual(t, ticks, 3.0)
	assert.Equal(t, float64(total(want)), value(t, fams, "aware_twin_pods_running", nil))
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func statusSummary(st []AppStatus) []string {
	var out []string
	for _, s := range st {
		out = append(out, fmt.Sprintf("%s: %d × %.3g CPU, %.0f MiB", s.App, s.Allocation.Replicas, s.Allocation.CPU, s.Allocation.Memory/(1<<20)))
	}
	return out
}
