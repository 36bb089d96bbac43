package testbed

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/testbed/local"
)

// Status is what `aware testbed status` prints.
type Status struct {
	Stack   string
	Outputs auto.OutputMap
	// Local are the local target's processes (nil on other targets or
	// when its supervisor is not running).
	Local *local.Endpoints
	// MPAs counts the testbed's MPAs; Stages counts them by agent stage
	// ("" for MPAs without an agent status yet).
	MPAs   int
	Stages map[string]int
}

// Status reads the stack's outputs, the target's processes and the MPAs.
func (d *Driver) Status(ctx context.Context) (Status, error) {
	s, err := d.stack(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Stack: d.stackName(), Stages: map[string]int{}}
	if st.Outputs, err = s.Outputs(ctx); err != nil {
		return st, fmt.Errorf("testbed: outputs: %w", err)
	}
	if len(st.Outputs) == 0 {
		return st, nil // never deployed, or down
	}
	name, _ := st.Outputs[OutputTarget].Value.(string)
	kc, err := s.GetConfig(ctx, Project+":"+KeyKubeconfig)
	if err != nil {
		return st, fmt.Errorf("testbed: the stack's kubeconfig: %w", err)
	}
	kubeconfig, err := stackTarget(Target(name)).status(d, &st, kc.Value)
	if err != nil {
		return st, err
	}
	ctxName, _ := s.GetConfig(ctx, Project+":"+KeyContext)
	ns, _ := st.Outputs[OutputAppsNamespace].Value.(string)
	st.MPAs, st.Stages, err = countStages(ctx, kubeconfig, ctxName.Value, ns)
	return st, err
}

func countStages(ctx context.Context, kubeconfig, kctx, ns string) (int, map[string]int, error) {
	rc, err := restConfig(kubeconfig, kctx)
	if err != nil {
		return 0, nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return 0, nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return 0, nil, fmt.Errorf("testbed: %w", err)
	}
	var list v1alpha1.MultidimPodAutoscalerList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, nil, fmt.Errorf("testbed: listing the MPAs: %w", err)
	}
	stages := map[string]int{}
	for _, m := range list.Items {
		stage := ""
		if m.Status.Agent != nil {
			stage = string(m.Status.Agent.Stage)
		}
		stages[stage]++
	}
	return len(list.Items), stages, nil
}
