package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
)

// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalercheckpoints,verbs=get;create;update

// WithCheckpoints keeps each MPA's built-in recommender (the VPA's
// histograms, the HPA's windows and scale events; a registered recommender
// that is not an *mpa.MPA is not checkpointed) in a
// MultidimPodAutoscalerCheckpoint written every every steps (0: none), and
// restores it on the controller's first step of the MPA, read through
// reader (an uncached reader, so that the controller does not watch every
// checkpoint; nil: the client). The MPAs' writes are spread over the
// rounds: an MPA writes when its step count plus a hash of its UID is a
// multiple of every.
func WithCheckpoints(reader client.Reader, every int) Option {
	return func(c *config) { c.ckptReader, c.ckptEvery = reader, every }
}

// restoreCheckpoint restores st's new built-in recommender from m's
// checkpoint when there is one of this MPA (of this generation or an
// earlier one); what it did is logged and, when a checkpoint was there,
// recorded as an event.
func (r *Reconciler) restoreCheckpoint(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, log *slog.Logger) {
	var ck v1alpha1.MultidimPodAutoscalerCheckpoint
	if err := r.readCheckpoint(ctx, m, &ck); err != nil {
		if !apierrors.IsNotFound(err) {
			r.cfg.metrics.errors.WithLabelValues("checkpoint").Inc()
			log.Warn("checkpoint not read; the recommender starts afresh", "err", err)
		}
		return
	}
	st.ckptVersion = ck.ResourceVersion
	var why string
	switch s := ck.Status; {
	case ck.Spec.MPAUID != m.UID:
		why = fmt.Sprintf("it belongs to an earlier MPA of this name (UID %s)", ck.Spec.MPAUID)
	case s.ObservedGeneration > m.Generation:
		// An earlier generation's is restored: what the recommender
		// learnt does not depend on the spec (see step).
		why = fmt.Sprintf("it is of generation %d, newer than the spec's %d", s.ObservedGeneration, m.Generation)
	case s.Version != v1alpha1.CheckpointVersion:
		why = fmt.Sprintf("its format %q is not %q", s.Version, v1alpha1.CheckpointVersion)
	default:
		var state mpa.State
		if err := json.Unmarshal(s.Recommender.Raw, &state); err != nil {
			why = fmt.Sprintf("status.recommender: %v", err)
		} else if err := st.builtin().Restore(state); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		msg := "checkpoint not restored, the recommender starts afresh: " + why
		log.Info(msg)
		r.event(m, corev1.EventTypeNormal, "CheckpointIgnored", msg)
		return
	}
	st.ckptSteps, st.stepsBase = st.builtin().Steps(), st.builtin().Steps()
	msg := fmt.Sprintf("recommender restored from its checkpoint of %s (%d steps)", ck.Status.LastUpdateTime.UTC().Format(time.RFC3339), ck.Status.Steps)
	log.Info(msg)
	r.event(m, corev1.EventTypeNormal, "CheckpointRestored", msg)
}

// checkpointIfDue writes the checkpoint of m's built-in recommender when
// it is due. Due by the steps this controller took (not the recommender's
// total): MPAs restored from checkpoints all stand at a multiple of their
// phase, and would otherwise all write in the same rounds.
func (r *Reconciler) checkpointIfDue(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, now time.Time, log *slog.Logger) {
	if b := st.builtin(); b == nil || !r.checkpointDue(m, b.Steps()-st.stepsBase) {
		return
	}
	if err := r.writeCheckpoint(ctx, m, st, now); err != nil {
		r.cfg.metrics.errors.WithLabelValues("checkpoint").Inc()
		log.Warn("recommender checkpoint not written", "err", err)
	}
}

// checkpointDue says whether m's recommender is to be written at this
// step, the steps-th this controller took of it.
func (r *Reconciler) checkpointDue(m *v1alpha1.MultidimPodAutoscaler, steps int64) bool {
	every := int64(r.cfg.ckptEvery)
	if every <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(m.UID))
	return (steps+int64(h.Sum64()%uint64(every)))%every == 0
}

// flushConcurrency is how many checkpoints FlushCheckpoints writes at once.
const flushConcurrency = 16

// FlushCheckpoints writes the checkpoint of every MPA whose recommender has
// stepped since its checkpoint was last written or read, so that a
// replacement controller goes on from the last step, not from up to
// checkpoint-every steps before it. Call it once the controller has stopped
// stepping (a graceful shutdown: the manager has returned), with a deadline
// inside the pod's termination grace period; what it cannot write in time
// keeps its periodic checkpoint. It returns how many it wrote.
func (r *Reconciler) FlushCheckpoints(ctx context.Context) (int, error) {
	if r.cfg.ckptEvery <= 0 {
		return 0, nil
	}
	type item struct {
		m  *v1alpha1.MultidimPodAutoscaler
		st *mpaState
	}
	var items []item
	r.mu.Lock()
	for uid, st := range r.state {
		if b := st.builtin(); b == nil || b.Steps() <= st.ckptSteps {
			continue
		}
		n := r.names[uid]
		items = append(items, item{&v1alpha1.MultidimPodAutoscaler{ObjectMeta: metav1.ObjectMeta{
			Namespace: n.Namespace, Name: n.Name, UID: uid, Generation: st.gen}}, st})
	}
	r.mu.Unlock()
	var (
		mu      sync.Mutex
		written int
		errs    []error
		wg      sync.WaitGroup
	)
	work := make(chan item)
	for range min(flushConcurrency, len(items)) {
		wg.Go(func() {
			for it := range work {
				err := r.writeCheckpoint(ctx, it.m, it.st, r.cfg.now())
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s/%s: %w", it.m.Namespace, it.m.Name, err))
				} else {
					written++
				}
				mu.Unlock()
			}
		})
	}
	skipped := 0
	for i, it := range items {
		if ctx.Err() != nil {
			skipped = len(items) - i
			break
		}
		work <- it
	}
	close(work)
	wg.Wait()
	if skipped > 0 {
		errs = append(errs, fmt.Errorf("%d checkpoints not written: %w", skipped, ctx.Err()))
	}
	return written, errors.Join(errs...)
}

// writeCheckpoint writes st's built-in recommender to m's checkpoint, creating it
// (owned by m) the first time.
func (r *Reconciler) writeCheckpoint(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, now time.Time) error {
	state := st.builtin().State()
	raw, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	yes := true
	ck := &v1alpha1.MultidimPodAutoscalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: st.ckptVersion,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MultidimPodAutoscaler",
				Name: m.Name, UID: m.UID, Controller: &yes}}},
		Spec: v1alpha1.MultidimPodAutoscalerCheckpointSpec{MPAName: m.Name, MPAUID: m.UID},
		Status: v1alpha1.MultidimPodAutoscalerCheckpointStatus{LastUpdateTime: metav1.NewTime(now), Version: v1alpha1.CheckpointVersion,
			ObservedGeneration: m.Generation, Steps: state.VPA.Calls, Recommender: runtime.RawExtension{Raw: raw}},
	}
	for attempt := 0; ; attempt++ {
		ck.ResourceVersion = st.ckptVersion
		if st.ckptVersion == "" {
			err = r.c.Create(ctx, ck)
		} else {
			err = r.c.Update(ctx, ck)
		}
		if err == nil {
			st.ckptVersion, st.ckptSteps = ck.ResourceVersion, state.VPA.Calls
			return nil
		}
		// Someone else wrote it (an earlier controller), or it was
		// deleted: read its version again, once.
		st.ckptVersion = ""
		if attempt > 0 || !(apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) || r.learnCheckpointVersion(ctx, m, st) != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
}

func (r *Reconciler) learnCheckpointVersion(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState) error {
	var ck v1alpha1.MultidimPodAutoscalerCheckpoint
	if err := r.readCheckpoint(ctx, m, &ck); err != nil {
		return err
	}
	st.ckptVersion = ck.ResourceVersion
	return nil
}

// readCheckpoint reads m's checkpoint through the checkpoint reader (the
// client when there is none).
func (r *Reconciler) readCheckpoint(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, ck *v1alpha1.MultidimPodAutoscalerCheckpoint) error {
	reader := r.cfg.ckptReader
	if reader == nil {
		reader = r.c
	}
	return reader.Get(ctx, client.ObjectKeyFromObject(m), ck)
}
