package v1alpha1_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// An agent profile is read from the profile.yaml key of a ConfigMap:
// unmarshal strictly, fill the defaults, validate.
func ExampleAgentProfile() {
	data := []byte("slo: {latencyP99Seconds: 0.2}\nthresholds: {online: 120}\n")
	var p v1alpha1.AgentProfile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		fmt.Println(err)
		return
	}
	p.Default()
	if err := p.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("online %g, serving %g, variance %g over %d episodes of %d steps; bootstrap %t\n",
		p.Thresholds.Online, p.Thresholds.Serving, p.Thresholds.Variance,
		p.Thresholds.Window, p.EpisodeLength, p.Bootstraps())
	// Output: online 120, serving 100, variance 10 over 10 episodes of 100 steps; bootstrap true
}
