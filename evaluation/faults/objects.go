package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// template is a copy of the first MPA, renamed, for malformed variants.
func (l *lab) template(ctx context.Context, name string) (*v1alpha1.MultidimPodAutoscaler, error) {
	ns, n, _ := strings.Cut(l.mpas[0], "/")
	var m v1alpha1.MultidimPodAutoscaler
	if err := l.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &m); err != nil {
		return nil, err
	}
	return &v1alpha1.MultidimPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *m.Spec.DeepCopy()}, nil
}

// malformed injects malformed objects: two MPAs the API server must refuse
// (CEL: inverted replica bounds, a resource policy whose minimum is above
// its maximum), an MPA whose target does not exist and a Deployment deleted under
// its MPA, which the controller must report in a condition and survive
// while it goes on stepping the others.
func (l *lab) malformed(ctx context.Context) (note, failed string, err error) {
	var notes, fails []string
	refuse := func(what, want string, edit func(*v1alpha1.MultidimPodAutoscaler)) error {
		m, err := l.template(ctx, what)
		if err != nil {
			return err
		}
		edit(m)
		err = l.admin.Create(ctx, m)
		switch {
		case err == nil:
			fails = append(fails, what+" was accepted")
			_ = l.admin.Delete(ctx, m)
		case strings.Contains(err.Error(), want):
			notes = append(notes, fmt.Sprintf("%s refused (%q)", what, want))
		default:
			fails = append(fails, fmt.Sprintf("%s refused for another reason: %v", what, err))
		}
		return nil
	}
	if err := refuse("mpa-inverted-replicas", "minReplicas must not exceed maxReplicas", func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Constraints = &v1alpha1.ScalingConstraints{MinReplicas: ptr.To[int32](9), MaxReplicas: 3}
	}); err != nil {
		return "", "", err
	}
	if err := refuse("mpa-inverted-bounds", "minAllowed.cpu must not exceed maxAllowed.cpu", func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName: "*",
			MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}}}
	}); err != nil {
		return "", "", err
	}
	// A target that does not exist.
	ghost, err := l.template(ctx, "mpa-no-target")
	if err != nil {
		return "", "", err
	}
	ghost.Spec.ScaleTargetRef.Name = "does-not-exist"
	if err := l.admin.Create(ctx, ghost); err != nil {
		return "", "", err
	}
	// A Deployment deleted under its MPA (the last app's).
	orphan := l.mpas[len(l.mpas)-1]
	ns, name, _ := strings.Cut(orphan, "/")
	var mpa v1alpha1.MultidimPodAutoscaler
	if err := l.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &mpa); err != nil {
		return "", "", err
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mpa.Spec.ScaleTargetRef.Name}}
	if err := l.admin.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return "", "", err
	}
	l.mpas = l.mpas[:len(l.mpas)-1] // it has nothing left to step
	for _, m := range []client.ObjectKey{client.ObjectKeyFromObject(ghost), {Namespace: ns, Name: name}} {
		reason, err := l.waitCondition(ctx, m, v1alpha1.ConditionAbleToScale, "FailedGetScale")
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v", m.Name, err))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s reported %s", m.Name, reason))
	}
	for _, o := range []client.Object{ghost, &mpa} {
		if err := l.admin.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return "", "", err
		}
	}
	return strings.Join(notes, "; "), strings.Join(fails, "; "), nil
}

// waitCondition waits up to four rounds for the MPA's condition to have
// the reason, and returns the condition's reason and message.
func (l *lab) waitCondition(ctx context.Context, key client.ObjectKey, typ, reason string) (string, error) {
	deadline := time.Now().Add(4 * l.cfg.Step)
	for {
		var m v1alpha1.MultidimPodAutoscaler
		err := l.admin.Get(ctx, key, &m)
		if err == nil {
			if c := meta.FindStatusCondition(m.Status.Conditions, typ); c != nil && c.Reason == reason {
				return fmt.Sprintf("%s=%s (%s)", typ, c.Reason, c.Message), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no condition %s=%s within four rounds (conditions %v, err %v)", typ, reason, m.Status.Conditions, err)
		}
		if err := sleepUntil(ctx, time.Now().Add(500*time.Millisecond)); err != nil {
			return "", err
		}
	}
}

// burst creates cfg.Burst MPAs at once in their own namespace (targets
// that do not exist, so that they cost the controller and not the pool),
// lets the controller step them for three rounds, deletes them at once,
// and compares the controller's goroutines, per-MPA metric series and
// store files with before.
func (l *lab) burst(ctx context.Context) (note, failed string, err error) {
	const ns = "burst"
	before, err := l.total(ctx)
	if err != nil {
		return "", "", err
	}
	files0 := countFiles(filepath.Join(l.dir, "controller-store"))
	if err := l.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", "", err
	}
	tmpl, err := l.template(ctx, "x")
	if err != nil {
		return "", "", err
	}
	names := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var createErr error
	for range 16 {
		wg.Go(func() {
			for i := range names {
				m := &v1alpha1.MultidimPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("burst-%04d", i)},
					Spec: *tmpl.Spec.DeepCopy()}
				m.Spec.ScaleTargetRef.Name = fmt.Sprintf("missing-%04d", i)
				if err := l.admin.Create(ctx, m); err != nil {
					mu.Lock()
					createErr = err
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for i := range l.cfg.Burst {
		names <- i
	}
	close(names)
	wg.Wait()
	if createErr != nil {
		return "", "", createErr
	}
	created := time.Since(start)
	if err := sleepUntil(ctx, time.Now().Add(3*l.cfg.Step)); err != nil {
		return "", "", err
	}
	during, err := l.total(ctx)
	if err != nil {
		return "", "", err
	}
	start = time.Now()
	if err := l.admin.DeleteAllOf(ctx, &v1alpha1.MultidimPodAutoscaler{}, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	deleted := time.Since(start)
	// Three rounds for the controller to see every deletion, then a
	// settled reading (goroutines of finished reconciles and of the
	// workqueue's timers wind down).
	if err := sleepUntil(ctx, time.Now().Add(3*l.cfg.Step)); err != nil {
		return "", "", err
	}
	after, err := l.total(ctx)
	if err != nil {
		return "", "", err
	}
	files := countFiles(filepath.Join(l.dir, "controller-store"))
	var fails []string
	if after.goroutines > before.goroutines+50 {
		fails = append(fails, fmt.Sprintf("goroutines %g before, %g after", before.goroutines, after.goroutines))
	}
	if after.mpaSeries > before.mpaSeries {
		fails = append(fails, fmt.Sprintf("per-MPA metric series %d before, %d after", before.mpaSeries, after.mpaSeries))
	}
	if files > files0+1 {
		fails = append(fails, fmt.Sprintf("store files %d before, %d after", files0, files))
	}
	note = fmt.Sprintf("%d MPAs created in %s and deleted in %s at once (targets absent); goroutines %g before, %g with them, %g after; per-MPA metric series %d, %d, %d; store files %d, %d",
		l.cfg.Burst, created.Round(time.Millisecond), deleted.Round(time.Millisecond), before.goroutines, during.goroutines, after.goroutines,
		before.mpaSeries, during.mpaSeries, after.mpaSeries, files0, files)
	return note, strings.Join(fails, "; "), nil
}

func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}
