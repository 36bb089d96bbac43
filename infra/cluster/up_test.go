package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cachedBinaries returns the default versions' binaries if Install has built
// them (`aware cluster up` or `make cluster-up` does; a cold build takes
// about 10 minutes); otherwise the test is skipped with that instruction.
func cachedBinaries(t *testing.T) Binaries {
	t.Helper()
	b, err := Cached(t.Context())
	if errors.Is(err, ErrNotBuilt) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: ci/setup.sh builds them)", err)
		}
		t.Skip(err)
	}
	require.NoError(t, err)
	return b
}

// TestUpDeploymentAndResize starts the control plane, runs a Deployment to
// Running pods on kwok's nodes, resizes a running pod in place through the
// pods/resize subresource and checks kwok reports the new resources, then
// checks Up is idempotent and Stop stops everything.
func TestUpDeploymentAndResize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	b := cachedBinaries(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := Up(ctx, Config{Dir: dir, Binaries: b, Nodes: 2, NodeCPU: 3, NodeMemory: 8 << 30, Log: testWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Down(context.Background())) })

	hc, err := c.adminClient()
	require.NoError(t, err)
	var node corev1.Node
	_, err = apiDo(ctx, hc, http.MethodGet, c.Server+"/api/v1/nodes/"+nodeName(1), nil, &node)
	require.NoError(t, err)
	assert.Equal(t, "3", node.Status.Allocatable.Cpu().String(), "NodeCPU")
	assert.Equal(t, "8Gi", node.Status.Allocatable.Memory().String(), "NodeMemory")
	assert.Equal(t, "1100", node.Status.Allocatable.Pods().String(), "PodsPerNode's default")

	replicas := int32(3)
	labels := map[string]string{"app": "demo"}
	dep := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "aware/workload:dev",
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					},
				}}},
			},
		},
	}
	_, err = apiDo(ctx, hc, http.MethodPost, c.Server+"/apis/apps/v1/namespaces/default/deployments", dep, nil)
	require.NoError(t, err)

	var pods corev1.PodList
	require.Eventually(t, func() bool {
		_, err := apiDo(ctx, hc, http.MethodGet, c.Server+"/api/v1/namespaces/default/pods?labelSelector=app%3Ddemo", nil, &pods)
		if err != nil {
			return false
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Resources != nil {
				running++
			}
		}
		return running == 3
	}, 60*time.Second, 200*time.Millisecond, "3 pods Running with container resources in their status")

	// Resize one pod in place: CPU 500m → 1.
	pod := pods.Items[0]
	patch := pod.DeepCopy()
	for _, r := range []corev1.ResourceList{patch.Spec.Containers[0].Resources.Requests, patch.Spec.Containers[0].Resources.Limits} {
		r[corev1.ResourceCPU] = resource.MustParse("1")
	}
	url := fmt.Sprintf("%s/api/v1/namespaces/default/pods/%s/resize", c.Server, pod.Name)
	_, err = apiDo(ctx, hc, http.MethodPut, url, patch, nil)
	require.NoError(t, err, "pods/resize")
	require.Eventually(t, func() bool {
		var p corev1.Pod
		if _, err := apiDo(ctx, hc, http.MethodGet, fmt.Sprintf("%s/api/v1/namespaces/default/pods/%s", c.Server, pod.Name), nil, &p); err != nil {
			return false
		}
		st := p.Status.ContainerStatuses
		return p.UID == pod.UID && len(st) == 1 && st[0].Resources != nil &&
			st[0].Resources.Limits.Cpu().Cmp(resource.MustParse("1")) == 0 && p.Status.ObservedGeneration == p.Generation
	}, 30*time.Second, 200*time.Millisecond, "the same pod reports 1 CPU after the in-place resize")

	// The audit log records a component under test (a UserKubeconfig user)
	// and what it was refused, and leaves the admin out.
	_, err = c.UserKubeconfig("nobody", "aware-nobody")
	require.NoError(t, err)
	p := pkiAt(filepath.Join(dir, "pki"))
	nobody, err := adminHTTP(p.caCert, p.clientFiles("user-nobody"))
	require.NoError(t, err)
	code, err := apiDo(ctx, nobody, http.MethodGet, c.Server+"/apis/coordination.k8s.io/v1/namespaces/default/leases/x", nil, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, code)
	var refused []AuditEvent
	require.Eventually(t, func() bool {
		refused, err = c.Forbidden("aware-nobody")
		return err == nil && len(refused) == 1
	}, 10*time.Second, 100*time.Millisecond, "the refusal is in the audit log")
	e := refused[0]
	assert.Equal(t, AuditEvent{User: "aware-nobody", Verb: "get", Resource: "leases", Group: "coordination.k8s.io", Namespace: "default", Name: "x",
		URI: "/apis/coordination.k8s.io/v1/namespaces/default/leases/x", Code: 403, Reason: e.Reason, At: e.At}, e)
	assert.WithinDuration(t, time.Now(), e.At, time.Minute)
	all, err := c.Audit("")
	require.NoError(t, err)
	for _, e := range all {
		assert.Equal(t, "aware-nobody", e.User, "only components under test are audited: %s", e)
	}

	// Up again finds the running control plane.
	c2, err := Up(ctx, Config{Dir: dir, Binaries: b, Nodes: 2})
	require.NoError(t, err)
	require.Equal(t, c.Server, c2.Server)

	// Stop (as `aware cluster down` would, from the state file) ends every process.
	require.NoError(t, Stop(ctx, dir))
	for _, p := range c.st.Procs {
		require.False(t, running(p), "%s still running", p.Name)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// TestRestartAndPause restarts the API server (objects survive, requests
// are served again) and pauses etcd (requests fail within their timeout,
// then succeed once it is resumed).
func TestRestartAndPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	b := cachedBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := Up(ctx, Config{Dir: t.TempDir(), Binaries: b, Nodes: 1, Log: testWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Down(context.Background())) })
	hc, err := c.adminClient()
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	_, err = apiDo(ctx, hc, http.MethodPost, c.Server+"/api/v1/namespaces", ns, nil)
	require.NoError(t, err)

	pid := c.st.Procs[1].Pid
	require.NoError(t, c.Restart(ctx, "kube-apiserver"))
	assert.NotEqual(t, pid, c.st.Procs[1].Pid, "a new process")
	_, err = apiDo(ctx, hc, http.MethodGet, c.Server+"/api/v1/namespaces/kept", nil, nil)
	require.NoError(t, err, "objects survive an API server restart")
	for _, p := range c.st.Procs {
		assert.True(t, running(p), "%s runs", p.Name)
	}
	again, err := Attach(ctx, c.dir)
	require.NoError(t, err, "the state file follows the new process")
	assert.Equal(t, c.st.Procs[1].Pid, again.st.Procs[1].Pid)

	require.NoError(t, c.Pause("etcd"))
	// A write must reach etcd (a read may be served from the API
	// server's watch cache).
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	paused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "written-while-paused"}}
	_, err = apiDo(short, hc, http.MethodPost, c.Server+"/api/v1/namespaces", paused, nil)
	stop()
	if err == nil {
		i, _ := c.proc("etcd")
		threads, terr := runningThreads(c.st.Procs[i].Pid)
		_ = c.Resume("etcd") // Down need not wait out a stopped etcd
		t.Fatalf("etcd paused: the write completed (etcd pid %d, threads not stopped: %v %v)", c.st.Procs[i].Pid, threads, terr)
	}
	require.NoError(t, c.Resume("etcd"))
	require.Eventually(t, func() bool {
		_, err := apiDo(ctx, hc, http.MethodGet, c.Server+"/api/v1/namespaces/kept", nil, nil)
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "served again once etcd resumes")
	require.NoError(t, c.Heal(ctx))
	for _, p := range c.st.Procs {
		assert.True(t, running(p), "%s runs after Heal", p.Name)
	}

	assert.ErrorContains(t, c.Pause("etcd2"), `no component "etcd2"`)
}
