package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/target"
)

// plan is one step's decision, for the updater.
type plan struct {
	// mpa is the MPA as the step saw it (its target and, for events, its
	// identity); st receives the outcome.
	mpa       *v1alpha1.MultidimPodAutoscaler
	st        *mpaState
	pol       Policy
	container string
	// desired is the bounded replica count; res the container's target,
	// applied to the pods (or the template) only when resize, with the
	// agent's resize threshold when agent is set; decided the step's time.
	desired int32
	res     Resources
	resize  bool
	agent   bool
	decided time.Time
}

// outcome is what the updater applied; the MPA's next status write
// reports it.
type outcome struct {
	lastScale  *metav1.Time
	conditions []metav1.Condition
}

func (o *outcome) set(gen int64, typ string, ok bool, reason, msg string) {
	meta.SetStatusCondition(&o.conditions, newCondition(gen, typ, ok, reason, msg))
}

// updater applies the steps' decisions with its own workers, one MPA at a
// time each, the latest decision of an MPA replacing one not yet started
// (an overloaded cluster skips stale decisions instead of queueing them).
type updater struct {
	r       *Reconciler
	workers int
	q       workqueue.TypedInterface[types.UID]

	mu    sync.Mutex
	plans map[types.UID]*plan
}

func newUpdater(r *Reconciler, workers int) *updater {
	return &updater{r: r, workers: workers, plans: map[types.UID]*plan{},
		q: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.UID]{Name: "mpa-updater"})}
}

func (u *updater) submit(p *plan) {
	u.mu.Lock()
	u.plans[p.mpa.UID] = p
	u.mu.Unlock()
	u.q.Add(p.mpa.UID)
}

// cancel drops the MPA's decision not yet started, if any: a later step
// found nothing to change (the queue's entry then applies nothing).
func (u *updater) cancel(uid types.UID) {
	u.mu.Lock()
	delete(u.plans, uid)
	u.mu.Unlock()
}

// Start runs the workers until ctx ends (a manager.Runnable; it runs only
// on the leader).
func (u *updater) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range u.workers {
		wg.Go(func() {
			for u.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	u.q.ShutDown()
	wg.Wait()
	return nil
}

// next applies one queued plan; false once the queue is shut down.
func (u *updater) next(ctx context.Context) bool {
	uid, shutdown := u.q.Get()
	if shutdown {
		return false
	}
	defer u.q.Done(uid)
	u.mu.Lock()
	p := u.plans[uid]
	delete(u.plans, uid)
	u.mu.Unlock()
	if p != nil {
		u.r.actuate(ctx, p)
	}
	return true
}

// actuate applies one decision against the target as it is now: replicas
// through the scale subresource, resources through applyResources. The
// outcome goes to the MPA's next status write; failures are retried by
// the next step's decision.
func (r *Reconciler) actuate(ctx context.Context, p *plan) {
	m, gen := p.mpa, p.mpa.Generation
	log := r.cfg.log.With("mpa", m.Namespace+"/"+m.Name)
	r.cfg.metrics.actuationDelay.Observe(r.cfg.now().Sub(p.decided).Seconds())
	var out outcome
	defer func() { p.st.add(out) }()
	obj, scale, err := target.GetScale(ctx, r.c, m)
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("scale").Inc()
		out.set(gen, v1alpha1.ConditionAbleToScale, false, "FailedGetScale", err.Error())
		log.Warn("decision not applied", "err", err)
		return
	}
	if p.desired != scale.Spec.Replicas {
		if err := r.scaleTo(ctx, obj, scale, p.desired); err != nil {
			r.cfg.metrics.errors.WithLabelValues("scale").Inc()
			out.set(gen, v1alpha1.ConditionAbleToScale, false, "FailedUpdateScale", err.Error())
			log.Warn("replicas not applied", "err", err)
		} else {
			t := metav1.NewTime(r.cfg.now())
			out.lastScale = &t
			r.event(m, corev1.EventTypeNormal, "Scaled", fmt.Sprintf("replicas %d → %d", scale.Spec.Replicas, p.desired))
		}
	}
	if !p.resize {
		return
	}
	pods, err := target.Pods(ctx, r.c, m.Namespace, scale.Status.Selector, r.cfg.podIndex)
	if err != nil {
		out.set(gen, v1alpha1.ConditionAbleToScale, false, "FailedListPods", err.Error())
		log.Warn("resources not applied", "err", err)
		return
	}
	if err := r.applyResources(ctx, m, p.pol, obj, pods, p.container, p.res, p.agent, &out, log); err != nil {
		log.Warn("resources not applied", "err", err)
	}
}

// add records an outcome; a later one replaces what it sets.
func (s *mpaState) add(o outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.lastScale != nil {
		s.done.lastScale = o.lastScale
	}
	for _, c := range o.conditions {
		meta.SetStatusCondition(&s.done.conditions, c)
	}
}

// report moves what the updater applied since the last status write into
// m's status (after the step, so that a failed actuation shows); it
// returns the outcome to add back should the write fail.
func (r *Reconciler) report(m *v1alpha1.MultidimPodAutoscaler, st *mpaState) outcome {
	st.mu.Lock()
	o := st.done
	st.done = outcome{}
	st.mu.Unlock()
	if o.lastScale != nil {
		m.Status.LastScaleTime = o.lastScale
	}
	for _, c := range o.conditions {
		c.ObservedGeneration = m.Generation
		meta.SetStatusCondition(&m.Status.Conditions, c)
	}
	return o
}
