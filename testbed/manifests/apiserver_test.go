package manifests_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// TestAPIServerAcceptsEveryObject submits every object of a full testbed
// (all components, 5 apps) to a real kube-apiserver: the namespaces and
// the CRD for real, everything else as a server-side dry run, which runs
// the server's defaulting, schema and CEL validation and admission without
// persisting. The mocks and the golden file cannot tell a field the server
// refuses; this does. A broken MPA must be refused by the CRD's CEL rules.
// The study Job (StudyJob) is submitted the same way.
func TestAPIServerAcceptsEveryObject(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cl, err := cluster.Up(ctx, cluster.Config{Dir: filepath.Join(t.TempDir(), "cluster"), Binaries: bins, Nodes: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Down(context.Background()) })
	rc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(rc, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, deploy.InstallCRDs(ctx, c, time.Minute))

	o := manifests.DefaultOptions()
	o.Apps = apps(t, 5)
	o, err = o.WithDefaults()
	require.NoError(t, err)
	sets, err := manifests.Build(o, creds())
	require.NoError(t, err)
	var mpa *unstructured.Unstructured
	n := 0
	for _, set := range sets {
		for _, obj := range set.Objects {
			m, err := manifests.ToMap(obj)
			require.NoError(t, err)
			u := &unstructured.Unstructured{Object: m}
			switch manifests.GVK(obj).Kind {
			case "CustomResourceDefinition":
				continue // installed above, from the same definition
			case "Namespace":
				require.NoError(t, c.Create(ctx, u), manifests.Key(obj))
			case "MultidimPodAutoscaler":
				mpa = u.DeepCopy()
				fallthrough
			default:
				require.NoError(t, c.Create(ctx, u, client.DryRunAll), "the API server refuses %s", manifests.Key(obj))
			}
			n++
		}
	}
	assert.Greater(t, n, 5*4+40, "every component's objects and the apps' were submitted")

	require.NotNil(t, mpa)
	max, found, err := unstructured.NestedInt64(mpa.Object, "spec", "constraints", "maxReplicas")
	require.NoError(t, err)
	require.True(t, found, "the generated MPAs bound their replicas")
	require.NoError(t, unstructured.SetNestedField(mpa.Object, max+1, "spec", "constraints", "minReplicas"))
	err = c.Create(ctx, mpa, client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "minReplicas must not exceed maxReplicas")
	serving := mpa.DeepCopy()
	unstructured.RemoveNestedField(serving.Object, "spec", "constraints", "minReplicas") // the bound broken above
	require.NoError(t, unstructured.SetNestedField(serving.Object, true, "spec", "agent", "startServing"))
	unstructured.RemoveNestedField(serving.Object, "spec", "agent", "bootstrap")
	err = c.Create(ctx, serving, client.DryRunAll)
	require.Error(t, err, "an agent that starts serving and bootstraps")
	assert.Contains(t, err.Error(), "startServing needs bootstrap: false")
	require.NoError(t, unstructured.SetNestedField(serving.Object, false, "spec", "agent", "bootstrap"))
	require.NoError(t, c.Create(ctx, serving, client.DryRunAll), "an agent that starts serving without bootstrapping")

	t.Run("study job", func(t *testing.T) { acceptsStudyJob(ctx, t, c, o) })
}

// acceptsStudyJob submits the study Job's objects (the golden file's
// spec) as a server-side dry run in o.Namespace, which the caller has
// created; an Indexed Job without completions must be refused, or the dry
// run validates nothing.
func acceptsStudyJob(ctx context.Context, t *testing.T, c client.Client, o manifests.Options) {
	objs, err := manifests.StudyJob(o, goldenStudyJob())
	require.NoError(t, err)
	var job *unstructured.Unstructured
	for _, obj := range objs {
		m, err := manifests.ToMap(obj)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: m}
		require.NoError(t, c.Create(ctx, u, client.DryRunAll), "the API server refuses %s", manifests.Key(obj))
		if manifests.GVK(obj).Kind == "Job" {
			job = u.DeepCopy()
		}
	}
	require.NotNil(t, job)
	unstructured.RemoveNestedField(job.Object, "spec", "completions")
	err = c.Create(ctx, job, client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.completions: Required value: when completion mode is Indexed")
}
