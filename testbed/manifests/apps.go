package manifests

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/generator"
)

// Apps returns each generated app's objects (its spec ConfigMap, the
// Deployment running the workload server, its Service and its MPA), in the
// order of o.Apps.
func Apps(o Options) ([]client.Object, error) {
	objs := make([]client.Object, 0, 4*len(o.Apps))
	for _, a := range o.Apps {
		b, err := generator.Build(a, o.AppOptions)
		if err != nil {
			return nil, fmt.Errorf("manifests: app %s: %w", a.Name(), err)
		}
		objs = append(objs, b.AppConfig, b.Deployment, b.Service, b.MPA)
	}
	return objs, nil
}

// Load returns one load-generator Job per app, replaying o.Trace against
// the app's Service at the app's mean rate times o.LoadScale, from the app's
// offset into the trace, seeded by the app's load seed.
func Load(o Options) []client.Object {
	objs := make([]client.Object, 0, len(o.Apps))
	for _, a := range o.Apps {
		name := "load-" + a.Name()
		m := objectMeta(name, o.AppsNamespace, ComponentLoad)
		m.Labels[AppLabel] = a.Name()
		args := []string{"loadgen",
			fmt.Sprintf("--target=http://%s.%s/invoke", a.Name(), o.AppsNamespace),
			"--trace=" + o.Trace,
			"--rate=" + strconv.FormatFloat(a.Load.MeanRate*o.LoadScale, 'g', 6, 64),
			"--window-start=" + strconv.Itoa(a.Load.Offset) + "s",
			"--duration=" + o.LoadDuration.String(),
			"--seed=" + strconv.FormatUint(uint64(a.Load.Seed), 10),
			"--metrics-addr=:9101",
		}
		objs = append(objs, &batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"), ObjectMeta: m,
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr(int32(3)),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: m.Labels},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyOnFailure,
						Containers: []corev1.Container{{
							Name: "loadgen", Image: o.Images.Aware, Args: args,
							Ports:           []corev1.ContainerPort{containerPort("metrics", 9101)},
							Resources:       resources("200m", "256Mi"),
							SecurityContext: nonRoot(),
						}},
					},
				},
			}})
	}
	return objs
}
