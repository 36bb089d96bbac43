package testbedrun

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Cell is one of a study's cells run as an MPA on the testbed: the
// application of the study's pool under the cell's own name (its
// Deployment, Service, spec ConfigMap and MPA), played by the study's twin
// from the same load shape, with the arm's recommender and agent profile.
type Cell struct {
	// Name is the cell's objects' name (a DNS label), e.g. app-0042-boot.
	Name string
	// App is the pool's application; Sim its simulator form at the twin's
	// step (generator.SimApps of the study's load shapes).
	App generator.App
	Sim sim.App
	// Recommender is the MPA's: v1alpha1.DefaultRecommenderName (HPA+VPA)
	// or the agent runner's name ("aware").
	Recommender string
	// CPUTarget, when positive, is the HPA CPU target of the MPA's
	// built-in recommender (the study's tuned one; spec.metrics and the
	// profile's targets.cpu).
	CPUTarget float64
	// Profile adjusts the application's agent profile (bootstrapping,
	// thresholds, episode length).
	Profile func(*v1alpha1.AgentProfile)
	// Episodes are the complete episodes the cell runs.
	Episodes int
	// Scenario, when set, is injected into the twin's application once
	// the cell has InjectAfter complete episodes (as soon as the record
	// that completes the last of them is stored: within half a step).
	Scenario    sim.Scenario
	InjectAfter int
	// Policy, when set, is the agent the cell's agent starts from: it is
	// written into the agent runner's policies folder for the run (and
	// removed after) and named by the MPA's initial-policy annotation
	// (controller/agents.AnnotationInitialPolicy).
	Policy *Policy
}

// Policy is an initial policy: a trained agent of the runner's kind
// (agents.KindDDPG or agents.KindBCQ) and the action mapping it acted
// through, which must be the runner's.
type Policy struct {
	Agent   agent.Agent
	Kind    string
	Mapping gym.Mapping
}

// AgentName is the agent runner's recommender name on the testbed.
const AgentName = "aware"

// validate names what is wrong with the cell.
func (c Cell) validate() error {
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("testbedrun: cell name %q: %v", c.Name, errs)
	}
	if c.Episodes < 1 {
		return fmt.Errorf("testbedrun: cell %s: %d episodes", c.Name, c.Episodes)
	}
	if c.Policy != nil && (c.Policy.Agent == nil || c.Recommender != AgentName) {
		return fmt.Errorf("testbedrun: cell %s: an initial policy needs an agent and the agent runner as the recommender", c.Name)
	}
	if c.Scenario != 0 && (c.InjectAfter < 0 || c.InjectAfter >= c.Episodes) {
		return fmt.Errorf("testbedrun: cell %s: scenario after %d episodes: want one of its %d episodes to follow it", c.Name, c.InjectAfter, c.Episodes)
	}
	if c.Sim.Name != c.App.Name() {
		return fmt.Errorf("testbedrun: cell %s: simulator app %q is not the application %q", c.Name, c.Sim.Name, c.App.Name())
	}
	return nil
}

// objects are the cell's objects in namespace ns: the generator's, named
// after the cell, the MPA's agent profile adjusted, and its initial
// policy, if any, named policy.
func (c Cell) objects(ns, policy string) (generator.Objects, generator.App, error) {
	a := c.App
	a.Spec.Name = c.Name
	if c.CPUTarget > 0 {
		a.Profile.Targets.CPU = c.CPUTarget
	}
	objs, err := generator.Build(a, generator.ManifestOptions{Namespace: ns, Recommender: c.Recommender})
	if err != nil {
		return generator.Objects{}, a, fmt.Errorf("testbedrun: cell %s: %w", c.Name, err)
	}
	if c.Profile != nil {
		c.Profile(objs.MPA.Spec.Agent)
	}
	if policy != "" {
		if objs.MPA.Annotations == nil {
			objs.MPA.Annotations = map[string]string{}
		}
		objs.MPA.Annotations[agents.AnnotationInitialPolicy] = policy
	}
	return objs, a, nil
}

// twinApp is the cell's simulator app under the cell's name.
func (c Cell) twinApp() sim.App {
	s := c.Sim
	s.Name = c.Name
	return s
}
