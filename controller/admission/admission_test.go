package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

func testMPA(mode v1alpha1.UpdateMode, cpu string) *v1alpha1.MultidimPodAutoscaler {
	one := int32(1)
	m := &v1alpha1.MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: v1alpha1.MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"},
			UpdatePolicy:   &v1alpha1.PodUpdatePolicy{UpdateMode: &mode},
			Constraints:    &v1alpha1.ScalingConstraints{MinReplicas: &one, MaxReplicas: 10},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "workload",
				MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}}},
		},
	}
	if cpu != "" {
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{
			ContainerName: "workload", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}}
	}
	return m
}

func testPod() *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "sidecar", Resources: corev1.ResourceRequirements{Limits: res.DeepCopy()}},
		{Name: "workload", Resources: corev1.ResourceRequirements{Requests: res.DeepCopy(), Limits: res.DeepCopy()}},
	}}}
}

func TestMutate(t *testing.T) {
	tests := []struct {
		name    string
		m       *v1alpha1.MultidimPodAutoscaler
		changed bool
		cpu     string
		msg     string
	}{
		{"sized", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, "1"), true, "1", "resources set by MultidimPodAutoscaler app"},
		{"capped by the policy", testMPA(v1alpha1.UpdateModeInitial, "3"), true, "2", ""},
		{"mode off", testMPA(v1alpha1.UpdateModeOff, "1"), false, "500m", "update mode Off"},
		{"no recommendation", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, ""), false, "500m", "no recommendation yet"},
		{"already there", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, "500m"), false, "500m", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			if tt.name == "already there" {
				p.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
				p.Spec.Containers[1].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("512Mi")
			}
			changed, msg := Mutate(tt.m, p)
			assert.Equal(t, tt.changed, changed)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, msg)
			}
			w := p.Spec.Containers[1].Resources
			assert.Equal(t, tt.cpu, w.Limits.Cpu().String())
			assert.Equal(t, tt.cpu, w.Requests.Cpu().String(), "requests = limits stay so")
			assert.Equal(t, "500m", p.Spec.Containers[0].Resources.Limits.Cpu().String(), "other containers untouched")
			if changed {
				assert.Equal(t, "app", p.Annotations[SizedByAnnotation])
				assert.Equal(t, "512Mi", w.Limits.Memory().String())
			}
		})
	}
}

func TestEnsureCerts(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	hosts := []string{"127.0.0.1", "aware.aware-system.svc"}
	ca, err := EnsureCerts(dir, hosts, now)
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(dir+"/"+CertFile, dir+"/"+KeyFile)
	require.NoError(t, err)
	require.NotEmpty(t, pair.Certificate)
	verify(t, ca, dir, "127.0.0.1", now)
	serving := read(t, dir, CertFile)
	again, err := EnsureCerts(dir, hosts, now)
	require.NoError(t, err)
	assert.Equal(t, ca, again, "a valid pair is kept")
	assert.Equal(t, serving, read(t, dir, CertFile))
	other, err := EnsureCerts(dir, []string{"other.svc"}, now)
	require.NoError(t, err)
	assert.Equal(t, ca, other, "new hosts: a new serving certificate under the same CA")
	assert.NotEqual(t, serving, read(t, dir, CertFile))
	verify(t, other, dir, "other.svc", now)
	_, err = EnsureCerts(dir, nil, now)
	assert.ErrorContains(t, err, "no host names")
}

// TestRotator renews the serving certificate under the same CA when less
// than a third of its year remains, and the CA when less than a third of
// its ten years remains; it publishes the bundle before it writes the
// files, and the bundle published with a new CA trusts the serving
// certificates before and after.
func TestRotator(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hosts := []string{"aware.aware-system.svc"}
	bundle0, err := EnsureCerts(dir, hosts, t0)
	require.NoError(t, err)
	now := t0
	var published [][]byte
	var servingAtPublish [][]byte
	r := &Rotator{Dir: dir, Hosts: hosts, Now: func() time.Time { return now }, Publish: func(_ context.Context, b []byte) error {
		published = append(published, b)
		servingAtPublish = append(servingAtPublish, read(t, dir, CertFile))
		return nil
	}}
	require.NoError(t, r.Check(t.Context()))
	assert.Empty(t, published, "nothing due")

	s1 := read(t, dir, CertFile)
	now = t0.Add(250 * 24 * time.Hour)
	require.NoError(t, r.Check(t.Context()))
	require.Len(t, published, 1)
	assert.Equal(t, bundle0, published[0], "the same CA")
	assert.Equal(t, s1, servingAtPublish[0], "published before the files change")
	s2 := read(t, dir, CertFile)
	assert.NotEqual(t, s1, s2)
	verify(t, published[0], dir, hosts[0], now)

	// Checks every 30 days for seven and a half years: serving
	// certificates renewed under the first CA, then one change of CA.
	caChanges := 0
	for now = now.Add(30 * 24 * time.Hour); now.Before(t0.Add(7*365*24*time.Hour + 180*24*time.Hour)); now = now.Add(30 * 24 * time.Hour) {
		ca := read(t, dir, CAFile)
		n := len(published)
		require.NoError(t, r.Check(t.Context()))
		verify(t, read(t, dir, CAFile), dir, hosts[0], now)
		if len(published) == n || bytes.Equal(ca, read(t, dir, CAFile)) {
			continue
		}
		caChanges++
		bundle := published[len(published)-1]
		assert.Contains(t, string(bundle), string(ca), "the old CA stays in the bundle")
		assert.Contains(t, string(bundle), string(read(t, dir, CAFile)))
		verify(t, bundle, dir, hosts[0], now)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(bundle))
		b, _ := pem.Decode(servingAtPublish[len(servingAtPublish)-1])
		old, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		_, err = old.Verify(x509.VerifyOptions{Roots: pool, DNSName: hosts[0], CurrentTime: now})
		assert.NoError(t, err, "the serving certificate from before the change is trusted by the published bundle")
	}
	assert.Equal(t, 1, caChanges, "the CA changed once, when a third of its ten years remained")
	assert.GreaterOrEqual(t, len(published), 10, "serving certificates renewed about every eight months")

	r.Publish = func(context.Context, []byte) error { return errors.New("API server away") }
	now = now.Add(300 * 24 * time.Hour) // the serving certificate is due
	before := read(t, dir, CertFile)
	assert.ErrorContains(t, r.Check(t.Context()), "API server away")
	assert.Equal(t, before, read(t, dir, CertFile), "files unchanged when the bundle could not be published")
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return b
}

// verify checks dir's serving certificate against the bundle for host.
func verify(t *testing.T, bundle []byte, dir, host string, now time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle))
	b, _ := pem.Decode(read(t, dir, CertFile))
	require.NotNil(t, b)
	cert, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: now})
	require.NoError(t, err)
}
