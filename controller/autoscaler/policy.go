package autoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/gym"
)

// Policy is what the controller needs of an MPA's spec, defaulted and
// checked: the bounds, the scaled container, the update mode, the
// recommender and the agent profile.
type Policy struct {
	Mode v1alpha1.UpdateMode
	// Recommender is the name of spec.recommenders[0]
	// (v1alpha1.DefaultRecommenderName without one): a recommender the
	// controller builds (RegisterRecommender) or an external one.
	Recommender string
	Bounds      recommender.Bounds
	// Container is the scaled container ("" = the pod's first container).
	Container string
	// ScaleCPU and ScaleMemory say which resources are controlled.
	ScaleCPU, ScaleMemory bool
	// CPUTarget is the HPA's utilisation target (from spec.metrics or the
	// profile).
	CPUTarget float64
	// Behavior is the HPA behaviour (spec.constraints.behavior over the
	// upstream defaults).
	Behavior hpa.Behavior
	// Agent is the defaulted profile; nil when the MPA has none.
	Agent *v1alpha1.AgentProfile
}

// External reports whether an external recommender writes the
// recommendation: the MPA names a recommender this binary has not
// registered (RegisterRecommender), such as the AWARE agent runner. The
// controller builds the registered ones itself.
func (p Policy) External() bool {
	_, ok := FindRecommender(p.Recommender)
	return !ok
}

// SLO is the agent profile's SLO as the gym package states it.
func (p Policy) SLO() gym.SLO {
	if p.Agent == nil {
		return gym.SLO{}
	}
	switch s := p.Agent.SLO; {
	case s.LatencyP99Seconds > 0:
		return gym.SLO{Kind: gym.LatencySLO, Target: s.LatencyP99Seconds}
	case s.ThroughputRPS > 0:
		return gym.SLO{Kind: gym.ThroughputSLO, Target: s.ThroughputRPS}
	}
	return gym.SLO{}
}

// GymBounds are the bounds as the gym package states them.
func (p Policy) GymBounds() gym.Bounds {
	b := p.Bounds
	return gym.Bounds{MinReplicas: b.MinReplicas, MaxReplicas: b.MaxReplicas, MinCPU: b.MinCPU, MaxCPU: b.MaxCPU, MinMemory: b.MinMemory, MaxMemory: b.MaxMemory}
}

// Defaults for resource bounds the resource policy leaves open: the
// upstream VPA's per-pod minimum and a generous maximum.
const (
	defaultMinCPU    = 0.025
	defaultMaxCPU    = 64
	defaultMinMemory = 250 * gym.MiB
	defaultMaxMemory = 256 * 1024 * gym.MiB
)

// PolicyOf reads an MPA's spec. Errors name the offending field.
func PolicyOf(m *v1alpha1.MultidimPodAutoscaler) (Policy, error) {
	s := &m.Spec
	var errs []error
	p := Policy{Mode: v1alpha1.UpdateModeInPlaceOrRecreate, Recommender: v1alpha1.DefaultRecommenderName, ScaleCPU: true, ScaleMemory: true}
	if s.UpdatePolicy != nil && s.UpdatePolicy.UpdateMode != nil {
		p.Mode = *s.UpdatePolicy.UpdateMode
	}
	switch p.Mode {
	case v1alpha1.UpdateModeOff, v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeInPlaceOrRecreate:
	default:
		errs = append(errs, fmt.Errorf("spec.updatePolicy.updateMode: unknown mode %q", p.Mode))
	}
	if len(s.Recommenders) > 0 {
		p.Recommender = s.Recommenders[0].Name
	}
	if s.ScaleTargetRef.Name == "" || s.ScaleTargetRef.Kind == "" {
		errs = append(errs, errors.New("spec.scaleTargetRef: kind and name are required"))
	}
	errs = append(errs, p.readConstraints(s.Constraints)...)
	if rp := s.ResourcePolicy; rp != nil {
		errs = append(errs, p.readResourcePolicy(rp)...)
	}
	if err := p.Bounds.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("spec.constraints/resourcePolicy: %w", err))
	}
	if s.Agent != nil {
		a := s.Agent.DeepCopy()
		a.Default()
		if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("spec.agent: %w", err))
		}
		p.Agent = a
	}
	errs = append(errs, p.readCPUTarget(s.Metrics)...)
	if err := errors.Join(errs...); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// readConstraints sets the replica bounds and the HPA behaviour from
// spec.constraints, over the defaults (and the resource bounds' defaults).
func (p *Policy) readConstraints(c *v1alpha1.ScalingConstraints) []error {
	var errs []error
	p.Bounds = recommender.Bounds{MinReplicas: 1, MaxReplicas: math.MaxInt32,
		MinCPU: defaultMinCPU, MaxCPU: defaultMaxCPU, MinMemory: defaultMinMemory, MaxMemory: defaultMaxMemory}
	p.Behavior = hpa.DefaultBehavior()
	if c == nil {
		return append(errs, errors.New("spec.constraints: maxReplicas is required"))
	}
	if c.MinReplicas != nil {
		p.Bounds.MinReplicas = int(*c.MinReplicas)
	}
	p.Bounds.MaxReplicas = int(c.MaxReplicas)
	if c.Behavior != nil {
		b, err := behavior(c.Behavior)
		if err != nil {
			errs = append(errs, err)
		}
		p.Behavior = b
	}
	return errs
}

// readResourcePolicy sets the scaled container, the controlled resources
// and the resource bounds from the container policy that applies: the
// first named one that is not Off, else "*".
func (p *Policy) readResourcePolicy(rp *v1alpha1.PodResourcePolicy) []error {
	var chosen *v1alpha1.ContainerResourcePolicy
	for i := range rp.ContainerPolicies {
		cp := &rp.ContainerPolicies[i]
		if cp.Mode != nil && *cp.Mode == v1alpha1.ContainerScalingModeOff {
			continue
		}
		if chosen == nil || (chosen.ContainerName == "*" && cp.ContainerName != "*") {
			chosen = cp
		}
	}
	if chosen == nil {
		p.ScaleCPU, p.ScaleMemory = false, false
		return nil
	}
	if chosen.ContainerName != "*" {
		p.Container = chosen.ContainerName
	}
	if len(chosen.ControlledResources) > 0 {
		p.ScaleCPU, p.ScaleMemory = false, false
		for _, r := range chosen.ControlledResources {
			p.ScaleCPU = p.ScaleCPU || r == corev1.ResourceCPU
			p.ScaleMemory = p.ScaleMemory || r == corev1.ResourceMemory
		}
	}
	field := fmt.Sprintf("spec.resourcePolicy.containerPolicies[%s]", chosen.ContainerName)
	setBound(&p.Bounds.MinCPU, chosen.MinAllowed, corev1.ResourceCPU)
	setBound(&p.Bounds.MaxCPU, chosen.MaxAllowed, corev1.ResourceCPU)
	setBound(&p.Bounds.MinMemory, chosen.MinAllowed, corev1.ResourceMemory)
	setBound(&p.Bounds.MaxMemory, chosen.MaxAllowed, corev1.ResourceMemory)
	if p.Bounds.MinCPU > p.Bounds.MaxCPU || p.Bounds.MinMemory > p.Bounds.MaxMemory {
		return []error{fmt.Errorf("%s: minAllowed exceeds maxAllowed (defaults fill the unset side: cpu %g–%g, memory %g–%g)",
			field, p.Bounds.MinCPU, p.Bounds.MaxCPU, p.Bounds.MinMemory, p.Bounds.MaxMemory)}
	}
	return nil
}

// readCPUTarget sets the HPA's CPU utilisation target: spec.metrics' cpu
// metric, else the agent profile's, else the default.
func (p *Policy) readCPUTarget(metrics []autoscalingv2.MetricSpec) []error {
	var errs []error
	p.CPUTarget = v1alpha1.DefaultCPUTarget
	if p.Agent != nil {
		p.CPUTarget = p.Agent.Targets.CPU
	}
	for i, ms := range metrics {
		if ms.Type == autoscalingv2.ResourceMetricSourceType && ms.Resource != nil && ms.Resource.Name == corev1.ResourceCPU {
			t := ms.Resource.Target
			if t.Type != autoscalingv2.UtilizationMetricType || t.AverageUtilization == nil {
				errs = append(errs, fmt.Errorf("spec.metrics[%d]: the cpu metric must have an averageUtilization target", i))
				continue
			}
			if u := *t.AverageUtilization; u <= 0 || u > 100 {
				errs = append(errs, fmt.Errorf("spec.metrics[%d]: averageUtilization %d is not in 1–100", i, u))
				continue
			}
			p.CPUTarget = float64(*t.AverageUtilization) / 100
		}
	}
	return errs
}

func setBound(dst *float64, l corev1.ResourceList, r corev1.ResourceName) {
	if q, ok := l[r]; ok {
		*dst = target.Amount(r, q)
	}
}

// behavior converts an autoscaling/v2 behaviour; unset directions keep the
// upstream defaults.
func behavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) (hpa.Behavior, error) {
	out := hpa.DefaultBehavior()
	var errs []error
	conv := func(dir string, r *autoscalingv2.HPAScalingRules, dst *hpa.Rules) {
		if r == nil {
			return
		}
		if r.StabilizationWindowSeconds != nil {
			dst.StabilizationWindow = time.Duration(*r.StabilizationWindowSeconds) * time.Second
		}
		if r.SelectPolicy != nil {
			switch *r.SelectPolicy {
			case autoscalingv2.MaxChangePolicySelect:
				dst.Select = hpa.SelectMax
			case autoscalingv2.MinChangePolicySelect:
				dst.Select = hpa.SelectMin
			case autoscalingv2.DisabledPolicySelect:
				dst.Select = hpa.SelectDisabled
			default:
				errs = append(errs, fmt.Errorf("spec.constraints.behavior.%s.selectPolicy: unknown %q", dir, *r.SelectPolicy))
			}
		}
		if len(r.Policies) > 0 {
			dst.Policies = nil
			for i, pol := range r.Policies {
				var t hpa.PolicyType
				switch pol.Type {
				case autoscalingv2.PodsScalingPolicy:
					t = hpa.Pods
				case autoscalingv2.PercentScalingPolicy:
					t = hpa.Percent
				default:
					errs = append(errs, fmt.Errorf("spec.constraints.behavior.%s.policies[%d].type: unknown %q", dir, i, pol.Type))
					continue
				}
				if pol.Value <= 0 || pol.PeriodSeconds <= 0 {
					errs = append(errs, fmt.Errorf("spec.constraints.behavior.%s.policies[%d]: value and periodSeconds must be positive", dir, i))
					continue
				}
				dst.Policies = append(dst.Policies, hpa.Policy{Type: t, Value: int(pol.Value), Period: time.Duration(pol.PeriodSeconds) * time.Second})
			}
		}
	}
	conv("scaleUp", b.ScaleUp, &out.ScaleUp)
	conv("scaleDown", b.ScaleDown, &out.ScaleDown)
	return out, errors.Join(errs...)
}
