package target

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestPods: the indexed lookup finds the same pods as the scan, for
// selectors with and without an exact label, and really uses the index (a
// client without it refuses the indexed lookup).
func TestPods(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	pod := func(name string, labels map[string]string, phase corev1.PodPhase, deleting bool) client.Object {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "x"}}}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp, p.Finalizers = &now, []string{"x"}
		}
		return p
	}
	objs := []client.Object{
		pod("a-1", map[string]string{"app": "a"}, corev1.PodRunning, false),
		pod("a-2", map[string]string{"app": "a", "tier": "db"}, corev1.PodPending, false),
		pod("a-done", map[string]string{"app": "a"}, corev1.PodSucceeded, false),
		pod("a-gone", map[string]string{"app": "a"}, corev1.PodRunning, true),
		pod("b-1", map[string]string{"app": "b"}, corev1.PodRunning, false),
		pod("other-ns", map[string]string{"app": "a"}, corev1.PodRunning, false),
	}
	objs[len(objs)-1].SetNamespace("elsewhere")
	indexed := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithIndex(&corev1.Pod{}, PodLabelIndex, podLabels).Build()
	plain := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	tests := []struct {
		selector string
		exact    bool
		want     []string
	}{
		{"app=a", true, []string{"a-1", "a-2"}},
		{"app==a,tier!=db", true, []string{"a-1"}},
		{"app in (a),tier", true, []string{"a-2"}},
		{"app in (a,b)", false, []string{"a-1", "a-2", "b-1"}},
		{"app notin (b)", false, []string{"a-1", "a-2"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			for _, c := range []struct {
				name    string
				r       client.Reader
				indexed bool
			}{{"scan", plain, false}, {"index", indexed, true}} {
				pods, err := Pods(ctx, c.r, "ns", tt.selector, c.indexed)
				require.NoError(t, err, c.name)
				var got []string
				for _, p := range pods {
					got = append(got, p.Name)
				}
				assert.ElementsMatch(t, tt.want, got, c.name)
			}
			_, err := Pods(ctx, plain, "ns", tt.selector, true)
			if tt.exact {
				assert.Error(t, err, "an exact label is looked up in the index")
			} else {
				assert.NoError(t, err, "set-based selectors scan")
			}
		})
	}
	_, err := Pods(ctx, indexed, "ns", "", true)
	assert.ErrorContains(t, err, "selects every pod")
	_, err = Pods(ctx, indexed, "ns", "app in (", true)
	assert.ErrorContains(t, err, `target selector "app in ("`)
}
