package autoscaler

import (
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/gym"
)

// decide is the plan phase: the recommendation in force, bounded by the
// policy (and, when an external recommender's acts, by the profile's
// per-step limits), becomes the plan the updater actuates once the status
// is written; nil when there is nothing to apply (no recommendation,
// updateMode Off, or the target already where the step wants it). It
// keeps this step's state and action for the next trajectory record.
func (r *Reconciler) decide(m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, o *observed, d decision, state []float64, now time.Time) *plan {
	replicas := o.scale.Spec.Replicas
	if !d.ok || pol.Mode == v1alpha1.UpdateModeOff {
		if pol.Mode == v1alpha1.UpdateModeOff {
			r.upd.cancel(m.UID)
		}
		st.prevState, st.prevAction = state, gym.Allocation{Replicas: int(replicas), CPU: o.cur.CPU, Memory: o.cur.Memory}.Vector(make([]float64, gym.ActDim))
		m.Status.DesiredReplicas = replicas
		return nil
	}
	desired, cappedR := DesiredReplicas(pol, replicas, d.replicas, d.agent)
	res, cappedV := TargetResources(pol, o.cur, d.res, d.agent)
	if cappedR || cappedV {
		r.setCondition(m, v1alpha1.ConditionScalingLimited, true, "CappedByPolicy", fmt.Sprintf("recommendation %d×(%gcores, %gMi) capped to %d×(%gcores, %gMi)", d.replicas, d.res.CPU, d.res.Memory/mib, desired, res.CPU, res.Memory/mib))
	} else {
		r.setCondition(m, v1alpha1.ConditionScalingLimited, false, "WithinBounds", "the recommendation is within the constraints and resource policy")
	}
	// Running pods are left alone for small changes (as upstream VPA's
	// updater); the trajectory records the resources the pods keep.
	applied, vertical := Resize(pol, o.cur, res, d.agent)
	if !vertical && podsOffTarget(pol, o.pods, o.container, res, d.agent) {
		// The mean is on target but a pod is not (one created from the
		// template while the admission webhook was off or failed
		// open): it is resized alone.
		vertical = true
	}
	st.prevState, st.prevAction = state, gym.Allocation{Replicas: int(desired), CPU: applied.CPU, Memory: applied.Memory}.Vector(make([]float64, gym.ActDim))
	m.Status.DesiredReplicas = desired
	resize := vertical && (pol.Mode == v1alpha1.UpdateModeInPlaceOrRecreate || pol.Mode == v1alpha1.UpdateModeRecreate)
	if desired == replicas && !resize {
		// The target is where this step wants it: an earlier decision
		// still queued would move it away.
		r.upd.cancel(m.UID)
		return nil
	}
	return &plan{mpa: m.DeepCopy(), st: st, pol: pol, container: o.container,
		desired: desired, res: res, resize: resize, agent: d.agent, decided: now}
}
