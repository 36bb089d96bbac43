package hpa

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
)

// Upstream defaults (kube-controller-manager flags and autoscaling/v2 API defaults).
const (
	DefaultTarget                 = 0.8 // autoscaling/v1 targetCPUUtilizationPercentage default
	DefaultTolerance              = 0.1 // --horizontal-pod-autoscaler-tolerance
	DefaultSyncPeriod             = 15 * time.Second
	DefaultDownscaleStabilization = 300 * time.Second // --horizontal-pod-autoscaler-downscale-stabilization
	defaultPolicyPeriod           = 15 * time.Second
	defaultScaleUpPods            = 4
	defaultScaleUpPercent         = 100
	defaultScaleDownPercent       = 100
)

// PolicyType is the unit of a scaling policy.
type PolicyType uint8

// Policy types (autoscaling/v2 HPAScalingPolicyType).
const (
	Pods    PolicyType = iota // Value pods per Period
	Percent                   // Value percent of the replicas at the start of Period
)

// Policy limits how much the replica count may change within Period.
type Policy struct {
	Type   PolicyType
	Value  int
	Period time.Duration
}

// Select chooses among the limits of several policies.
type Select uint8

// Policy selections (autoscaling/v2 ScalingPolicySelect).
const (
	SelectMax      Select = iota // the policy allowing the largest change
	SelectMin                    // the policy allowing the smallest change
	SelectDisabled               // no scaling in this direction
)

// Rules are the behaviour in one direction (autoscaling/v2 HPAScalingRules).
type Rules struct {
	StabilizationWindow time.Duration
	Select              Select
	Policies            []Policy
}

// Behavior is spec.behavior of an autoscaling/v2 HPA.
type Behavior struct {
	ScaleUp, ScaleDown Rules
}

// DefaultBehavior is what the API server fills in for an empty spec.behavior:
// scale up by max(4 pods, 100 %) per 15 s without stabilisation, scale down by
// up to 100 % per 15 s after a 300 s stabilisation window.
func DefaultBehavior() Behavior {
	return Behavior{
		ScaleUp: Rules{Select: SelectMax, Policies: []Policy{
			{Type: Pods, Value: defaultScaleUpPods, Period: defaultPolicyPeriod},
			{Type: Percent, Value: defaultScaleUpPercent, Period: defaultPolicyPeriod},
		}},
		ScaleDown: Rules{StabilizationWindow: DefaultDownscaleStabilization, Select: SelectMax, Policies: []Policy{
			{Type: Percent, Value: defaultScaleDownPercent, Period: defaultPolicyPeriod},
		}},
	}
}

type config struct {
	target    float64
	tolerance float64
	behavior  Behavior
}

// Option configures an HPA.
type Option func(*config)

// WithTarget sets the target average CPU utilisation as a fraction of the
// request (0.7 = 70 %); upstream keeps it as an integer percentage.
func WithTarget(u float64) Option { return func(c *config) { c.target = u } }

// WithTolerance sets the band |ratio-1| <= tol in which nothing changes.
func WithTolerance(tol float64) Option { return func(c *config) { c.tolerance = tol } }

// WithDownscaleStabilization sets the scale-down stabilisation window of the
// behaviour configured so far.
func WithDownscaleStabilization(d time.Duration) Option {
	return func(c *config) { c.behavior.ScaleDown.StabilizationWindow = d }
}

// WithBehavior replaces the whole behaviour (policies are copied).
func WithBehavior(b Behavior) Option {
	return func(c *config) {
		b.ScaleUp.Policies = append([]Policy(nil), b.ScaleUp.Policies...)
		b.ScaleDown.Policies = append([]Policy(nil), b.ScaleDown.Policies...)
		c.behavior = b
	}
}

// Status is what the last Recommend call computed, for the MPA status and
// for the hpa+vpa combination.
type Status struct {
	Valid          bool    `json:"valid,omitempty"`          // false when the metric could not be computed (no ready pods, bounds enforced)
	Utilization    float64 `json:"utilization,omitempty"`    // mean CPU utilisation of ready pods, fraction of the request (integer percent upstream)
	UsageRatio     float64 `json:"usageRatio,omitempty"`     // Utilization / target
	MetricReplicas int     `json:"metricReplicas,omitempty"` // replica count proposed by the metric, before stabilisation and limits
	Replicas       int     `json:"replicas,omitempty"`       // the recommendation
}

// slot holds what one past call recorded.
type slot struct {
	step                 int64 // call index the slot belongs to; -1 when unused
	hasRec               bool
	recMin, recMax       int // recommendations recorded at that call
	scaledUp, scaledDown int // replicas added / removed at that call
}

// HPA is the upstream horizontal pod autoscaler for one workload.
type HPA struct {
	b         recommender.Bounds
	step      time.Duration
	targetPct int64
	tolerance float64
	behavior  Behavior
	ring      []slot // indexed by call number modulo len
	n         int64  // calls so far
	fresh     bool   // the next call records the current replicas first
	status    Status
}

// New returns an HPA for bounds b, called every step.
func New(b recommender.Bounds, step time.Duration, opts ...Option) (*HPA, error) {
	c := config{target: DefaultTarget, tolerance: DefaultTolerance, behavior: DefaultBehavior()}
	for _, o := range opts {
		o(&c)
	}
	if err := errors.Join(b.Validate(), recommender.ValidateStep(step), c.validate()); err != nil {
		return nil, fmt.Errorf("hpa: %w", err)
	}
	pct := math.Round(c.target * 100)
	h := &HPA{b: b, step: step, targetPct: int64(pct), tolerance: c.tolerance, behavior: c.behavior}
	// The ring must reach back over the longest window or policy period.
	longest := max(c.behavior.ScaleUp.StabilizationWindow, c.behavior.ScaleDown.StabilizationWindow)
	for _, p := range append(append([]Policy(nil), c.behavior.ScaleUp.Policies...), c.behavior.ScaleDown.Policies...) {
		longest = max(longest, p.Period)
	}
	h.ring = make([]slot, h.within(longest)+1)
	h.clear()
	return h, nil
}

func (c config) validate() error {
	var errs []error
	if !(c.target >= 0.01) || math.IsInf(c.target, 0) {
		errs = append(errs, fmt.Errorf("target utilisation %g must be at least 0.01 (1 %%)", c.target))
	}
	if !(c.tolerance >= 0 && c.tolerance < 1) {
		errs = append(errs, fmt.Errorf("tolerance %g must be in [0, 1)", c.tolerance))
	}
	for _, d := range []struct {
		dir string
		r   Rules
	}{{"scaleUp", c.behavior.ScaleUp}, {"scaleDown", c.behavior.ScaleDown}} {
		dir, r := d.dir, d.r
		if r.StabilizationWindow < 0 || r.StabilizationWindow > time.Hour {
			errs = append(errs, fmt.Errorf("behavior.%s.stabilizationWindow %v must be in [0, 1h]", dir, r.StabilizationWindow))
		}
		if r.Select > SelectDisabled {
			errs = append(errs, fmt.Errorf("behavior.%s.selectPolicy %d is unknown", dir, r.Select))
		}
		if len(r.Policies) == 0 && r.Select != SelectDisabled {
			errs = append(errs, fmt.Errorf("behavior.%s has no policies", dir))
		}
		for i, p := range r.Policies {
			if p.Type > Percent || p.Value <= 0 || p.Period <= 0 || p.Period > 30*time.Minute {
				errs = append(errs, fmt.Errorf("behavior.%s.policies[%d] %+v: want type Pods or Percent, value > 0, period in (0, 30m]", dir, i, p))
			}
		}
	}
	return errors.Join(errs...)
}

// Name implements recommender.Recommender.
func (h *HPA) Name() string { return "hpa" }

// Status returns what the last Recommend call computed.
func (h *HPA) Status() Status { return h.status }

// Tolerance returns the configured tolerance.
func (h *HPA) Tolerance() float64 { return h.tolerance }

// ResetStabilization forgets the recorded recommendations, as if the HPA had
// just been created (the next call records the current replicas first);
// recorded scale events, which rate-limit pods, are kept. The hpa+vpa
// combination calls it when the CPU request changes, because recommendations
// computed against the old request are stale.
func (h *HPA) ResetStabilization() {
	for i := range h.ring {
		h.ring[i].hasRec = false
	}
	h.fresh = true
}

func (h *HPA) clear() {
	for i := range h.ring {
		h.ring[i] = slot{step: -1}
	}
	h.fresh = true
}

// within returns how many earlier calls lie strictly within d of now:
// the largest k with k*step < d.
func (h *HPA) within(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d - 1) / h.step)
}

// at returns the slot of the call age calls ago, or nil if nothing was recorded there.
func (h *HPA) at(age int) *slot {
	i := h.n - int64(age)
	if i < 0 {
		return nil
	}
	s := &h.ring[i%int64(len(h.ring))]
	if s.step != i {
		return nil
	}
	return s
}

// cur returns the slot of the current call, claiming it if needed.
func (h *HPA) cur() *slot {
	s := &h.ring[h.n%int64(len(h.ring))]
	if s.step != h.n {
		*s = slot{step: h.n}
	}
	return s
}

func (s *slot) record(r int) {
	if !s.hasRec {
		s.hasRec, s.recMin, s.recMax = true, r, r
		return
	}
	s.recMin, s.recMax = min(s.recMin, r), max(s.recMax, r)
}

// Recommend implements recommender.Recommender: it returns obs.Current with
// the replica count the HPA would set.
func (h *HPA) Recommend(obs recommender.Observation) recommender.Allocation {
	out := obs.Current
	out.Replicas = h.replicas(obs)
	h.status.Replicas = out.Replicas
	h.n++
	return out
}

// replicas mirrors HorizontalController.reconcileAutoscaler.
func (h *HPA) replicas(obs recommender.Observation) int {
	current := obs.Current.Replicas
	h.status = Status{}
	if h.fresh { // recordInitialRecommendation
		h.cur().record(current)
		h.fresh = false
	}
	switch {
	case current == 0: // minReplicas >= 1: autoscaling is disabled for this resource
		return 0
	case current > h.b.MaxReplicas:
		h.storeEvent(current, h.b.MaxReplicas)
		return h.b.MaxReplicas
	case current < h.b.MinReplicas:
		h.storeEvent(current, h.b.MinReplicas)
		return h.b.MinReplicas
	}
	metric, ok := h.metricReplicas(obs)
	if !ok { // "did not receive metrics for any ready pods": no change, nothing recorded
		return current
	}
	h.status.MetricReplicas = metric
	desired := h.stabilize(current, metric)
	desired = h.limitRate(current, desired)
	if desired != current {
		h.storeEvent(current, desired)
	}
	return desired
}

// metricReplicas mirrors ReplicaCalculator.GetResourceReplicas for CPU with
// every pod alike: the ready pods share CPUUsage, the other pods of
// Current.Replicas are unready (ignored on scale-down, 0 % on scale-up).
// Usage and request are in millicores and the utilisation an integer
// percentage, as upstream (GetResourceUtilizationRatio).
func (h *HPA) metricReplicas(obs recommender.Observation) (int, bool) {
	current := obs.Current.Replicas
	requestMilli := int64(math.Round(obs.Current.CPU * 1000))
	if obs.ReadyReplicas <= 0 || requestMilli <= 0 || !(obs.CPUUsage >= 0) {
		return 0, false
	}
	ready := min(obs.ReadyReplicas, current)
	unready := current - ready
	usageMilli := int64(math.Round(obs.CPUUsage / float64(obs.ReadyReplicas) * 1000)) // per pod
	utilPct := usageMilli * 100 / requestMilli
	ratio := float64(utilPct) / float64(h.targetPct)
	h.status.Valid = true
	h.status.Utilization = float64(utilPct) / 100
	h.status.UsageRatio = ratio

	if unready == 0 || ratio <= 1 { // no rebalancing of unready pods
		if math.Abs(1-ratio) <= h.tolerance {
			return current, true
		}
		return int(math.Ceil(ratio * float64(ready))), true
	}
	// Scale-up with unready pods: count them as using 0 % and recompute.
	newPct := usageMilli * int64(ready) * 100 / (requestMilli * int64(current))
	newRatio := float64(newPct) / float64(h.targetPct)
	if math.Abs(1-newRatio) <= h.tolerance || newRatio < 1 {
		return current, true // too small a change, or the direction would flip
	}
	newReplicas := int(math.Ceil(newRatio * float64(current)))
	if newReplicas < current {
		return current, true
	}
	return newReplicas, true
}

// stabilize mirrors stabilizeRecommendationWithBehaviors.
func (h *HPA) stabilize(current, desired int) int {
	upW, downW := h.behavior.ScaleUp.StabilizationWindow, h.behavior.ScaleDown.StabilizationWindow
	up, down := desired, desired
	for age := 0; age < len(h.ring); age++ {
		s := h.at(age)
		if s == nil || !s.hasRec {
			continue
		}
		ago := time.Duration(age) * h.step
		if ago < upW {
			up = min(up, s.recMin)
		}
		if ago < downW {
			down = max(down, s.recMax)
		}
	}
	rec := current
	if rec < up {
		rec = up
	}
	if rec > down {
		rec = down
	}
	h.cur().record(desired)
	return rec
}

// limitRate mirrors convertDesiredReplicasWithBehaviorRate.
func (h *HPA) limitRate(current, desired int) int {
	switch {
	case desired > current:
		limit := max(h.scaleUpLimit(current), current)
		return min(desired, h.b.MaxReplicas, limit)
	case desired < current:
		limit := min(h.scaleDownLimit(current), current)
		return max(desired, h.b.MinReplicas, limit)
	}
	return desired
}

// changes sums the replicas added and removed by the calls within period.
func (h *HPA) changes(period time.Duration) (added, removed int) {
	for age := 1; age <= h.within(period); age++ {
		if s := h.at(age); s != nil {
			added += s.scaledUp
			removed += s.scaledDown
		}
	}
	return added, removed
}

// scaleUpLimit mirrors calculateScaleUpLimitWithScalingRules.
func (h *HPA) scaleUpLimit(current int) int {
	r := h.behavior.ScaleUp
	if r.Select == SelectDisabled {
		return current
	}
	result := math.MinInt
	if r.Select == SelectMin {
		result = math.MaxInt
	}
	for _, p := range r.Policies {
		added, removed := h.changes(p.Period)
		start := current - added + removed
		var proposed int
		if p.Type == Pods {
			proposed = start + p.Value
		} else {
			proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if r.Select == SelectMin {
			result = min(result, proposed)
		} else {
			result = max(result, proposed)
		}
	}
	return result
}

// scaleDownLimit mirrors calculateScaleDownLimitWithBehaviors.
func (h *HPA) scaleDownLimit(current int) int {
	r := h.behavior.ScaleDown
	if r.Select == SelectDisabled {
		return current
	}
	result := math.MaxInt
	if r.Select == SelectMin {
		result = math.MinInt
	}
	for _, p := range r.Policies {
		added, removed := h.changes(p.Period)
		start := current - added + removed
		var proposed int
		if p.Type == Pods {
			proposed = start - p.Value
		} else {
			proposed = int(float64(start) * (1 - float64(p.Value)/100))
		}
		if r.Select == SelectMin {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// storeEvent mirrors storeScaleEvent.
func (h *HPA) storeEvent(from, to int) {
	s := h.cur()
	if to > from {
		s.scaledUp += to - from
	} else {
		s.scaledDown += from - to
	}
}

var _ recommender.Recommender = (*HPA)(nil)
