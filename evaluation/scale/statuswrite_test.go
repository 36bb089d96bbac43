package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// BenchmarkMPAStatusWrite measures what one MPA status write costs the API
// server, in its CPU time per write (apiserver-ms/op, from /proc): every
// MPA step makes one, and on a small machine they bound the round at 1000
// MPAs (aware bench controller). Eight writers spread b.N writes over 200
// generated MPAs on an otherwise idle local control plane. Variants: the
// controller's status as a merge patch (what it sends), the same status as
// an update (PUT: no patch to apply, but the whole object sent), and a
// status with the recommendation only (what a lean status would cost).
//
//	go test -run '^$' -bench MPAStatusWrite -benchtime 2000x ./evaluation/scale/
func BenchmarkMPAStatusWrite(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a control plane")
	}
	bins := clustertest.Binaries(b)
	ctx := b.Context()
	cl, err := cluster.Up(ctx, cluster.Config{Dir: filepath.Join(b.TempDir(), "cluster"), Binaries: bins, Nodes: 2})
	require.NoError(b, err)
	b.Cleanup(func() { _ = cl.Down(context.Background()) })
	rc, err := restConfig(cl.Kubeconfig)
	require.NoError(b, err)
	c, err := adminClient(rc)
	require.NoError(b, err)
	require.NoError(b, deploy.InstallCRDs(ctx, c, time.Minute))
	require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}))
	apiserver := childNamed(b, "kube-apiserver")

	const n, writers = 200, 8
	mpas := generatedMPAs(b, n)
	for _, m := range mpas {
		require.NoError(b, c.Create(ctx, m))
	}
	for _, v := range []struct {
		name   string
		status func(i int, at time.Time) v1alpha1.MultidimPodAutoscalerStatus
		write  func(ctx context.Context, orig, m *v1alpha1.MultidimPodAutoscaler) error
	}{
		{"merge-patch/controller-status", controllerStatus, func(ctx context.Context, orig, m *v1alpha1.MultidimPodAutoscaler) error {
			return c.Status().Patch(ctx, m, client.MergeFrom(orig))
		}},
		{"update/controller-status", controllerStatus, func(ctx context.Context, _, m *v1alpha1.MultidimPodAutoscaler) error {
			return c.Status().Update(ctx, m)
		}},
		{"merge-patch/recommendation-only", recommendationOnly, func(ctx context.Context, orig, m *v1alpha1.MultidimPodAutoscaler) error {
			return c.Status().Patch(ctx, m, client.MergeFrom(orig))
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			// Each MPA starts from this variant's status, written whole.
			at := time.Now().Truncate(time.Second)
			for i, m := range mpas {
				m.Status = v.status(i, at)
				require.NoError(b, c.Status().Update(ctx, m))
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			cpu0 := procTime(b, apiserver)
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					for k := 0; ; k++ {
						if next.Add(1) > int64(b.N) {
							return
						}
						i := w + writers*(k%(n/writers))
						m := mpas[i]
						orig := m.DeepCopy()
						m.Status = v.status(i, at.Add(time.Duration(k+1)*15*time.Second))
						if err := v.write(ctx, orig, m); err != nil {
							errs <- fmt.Errorf("MPA %s: %w", m.Name, err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			require.NoError(b, <-errs)
			b.ReportMetric(float64(procTime(b, apiserver)-cpu0)/float64(time.Millisecond)/float64(b.N), "apiserver-ms/op")
		})
	}
}

// generatedMPAs are the first n MPAs of the default pool, as the benchmark
// deploys them.
func generatedMPAs(b *testing.B, n int) []*v1alpha1.MultidimPodAutoscaler {
	prof, err := calibration.Default()
	require.NoError(b, err)
	_, objs, err := poolObjects(prof, n, 1, 0, 0)
	require.NoError(b, err)
	out := make([]*v1alpha1.MultidimPodAutoscaler, n)
	for i, o := range objs {
		out[i] = o.MPA
	}
	return out
}

// controllerStatus is a status as the controller writes it with the
// built-in recommender and an agent profile when it changed: the
// recommendation with the VPA's bounds, five conditions and the agent's
// stage and episode.
func controllerStatus(i int, at time.Time) v1alpha1.MultidimPodAutoscalerStatus {
	s := recommendationOnly(i, at)
	s.Recommendation.ContainerRecommendations[0].LowerBound = resources(i+100, 300)
	s.Recommendation.ContainerRecommendations[0].UpperBound = resources(i+900, 900)
	s.Recommendation.ContainerRecommendations[0].UncappedTarget = resources(i+500, 500)
	s.ObservedGeneration, s.CurrentReplicas, s.DesiredReplicas = 1, 2, 2
	s.Agent = &v1alpha1.AgentStatus{Stage: v1alpha1.StageOffline, StageTime: &metav1.Time{Time: at.Add(-time.Hour)}, Episode: at.Unix() / 1500}
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: 1,
			LastTransitionTime: metav1.Time{Time: at.Add(-time.Hour)}}
	}
	s.Conditions = []metav1.Condition{
		cond(v1alpha1.ConditionAbleToScale, "SucceededGetScale", "the target's scale subresource and pods can be read"),
		cond(v1alpha1.ConditionMetricsAvailable, "MetricsFresh", "the target's metrics are fresh"),
		cond(v1alpha1.ConditionRecommendationProvided, "RecommendationApplied", "acting on the recommendation of hpa+vpa"),
		cond(v1alpha1.ConditionScalingLimited, "WithinBounds", "the recommendation is within the constraints and resource policy"),
		cond(v1alpha1.ConditionResizedInPlace, "Resized", "2 pods resized in place to (0.5cores, 512Mi)"),
	}
	return s
}

// recommendationOnly is a status with the recommendation's target only.
func recommendationOnly(i int, at time.Time) v1alpha1.MultidimPodAutoscalerStatus {
	replicas := int32(2)
	return v1alpha1.MultidimPodAutoscalerStatus{Recommendation: &v1alpha1.RecommendedPodResources{
		Replicas: &replicas, Recommender: "hpa+vpa", Time: &metav1.Time{Time: at},
		ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
			Target: resources(i+int(at.Unix()/15)%50, 512)}},
	}}
}

func resources(milli, mib int) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(128+milli%1000), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(mib)<<20, resource.BinarySI)}
}

// childNamed is the pid of this process's child command name (the cluster's
// processes are its children).
func childNamed(b *testing.B, name string) int {
	kids, err := children(os.Getpid())
	require.NoError(b, err)
	for pid, st := range kids {
		if st.comm == name {
			return pid
		}
	}
	b.Fatalf("no child process %s", name)
	return 0
}

func procTime(b *testing.B, pid int) time.Duration {
	_, cpu, err := procCPU(pid)
	require.NoError(b, err)
	return cpu
}
