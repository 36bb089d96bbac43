package manifests

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/deploy"
)

// Namespaces returns the shared and the apps' namespaces.
func Namespaces(o Options) []client.Object {
	return []client.Object{namespace(o.Namespace), namespace(o.AppsNamespace)}
}

// MPA returns the MultidimPodAutoscaler and checkpoint CRDs, the controller (with its
// RBAC, its Service for metrics and the admission webhook) and, with
// o.Agents, the AWARE agent runner. The controller generates its webhook
// certificate and registers the MutatingWebhookConfiguration itself (its
// --webhook-service), so no certificate is kept in the objects.
func MPA(o Options) ([]client.Object, error) {
	crds, err := deploy.CRDs()
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	ns := o.Namespace
	prom := fmt.Sprintf("http://%s.%s:%d", PrometheusName, ns, PrometheusPort)
	influx := fmt.Sprintf("http://%s.%s:%d", InfluxDBName, ns, InfluxDBPort)
	var objs []client.Object
	for _, crd := range crds {
		crd.TypeMeta = typeMeta("apiextensions.k8s.io/v1", "CustomResourceDefinition")
		objs = append(objs, crd)
	}
	role, err := deploy.ControllerRole()
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	objs = append(objs, rbac(ControllerName, ns, role)...)
	if o.Agents {
		agentsRole, err := deploy.AgentsRole()
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		objs = append(objs, rbac(AgentsName, ns, agentsRole)...)
	}
	if !o.Components.Controller {
		// The controller and the agents run outside the cluster (as on the
		// local control plane), as their service accounts: the RBAC stays.
		return objs, nil
	}
	args := []string{"controller",
		"--prometheus=" + prom,
		"--influx-url=" + influx,
		"--store-dir=/var/lib/aware/spool",
		"--step=" + o.Step.String(),
		"--metrics-addr=:" + strconv.Itoa(ControllerMetricsPort),
		"--probe-addr=:" + strconv.Itoa(ControllerProbePort),
		"--leader-elect",
		"--leader-election-namespace=" + ns,
	}
	ports := []corev1.ServicePort{port("metrics", ControllerMetricsPort)}
	if o.Webhook {
		args = append(args, "--webhook",
			"--webhook-port="+strconv.Itoa(WebhookPort),
			"--webhook-cert-dir=/var/lib/aware/certs",
			"--webhook-service="+ns+"/"+ControllerName)
		ports = append(ports, corev1.ServicePort{Name: "webhook", Port: 443, TargetPort: port("", WebhookPort).TargetPort, Protocol: corev1.ProtocolTCP})
	}
	objs = append(objs,
		deployment(ControllerName, ns, ComponentMPA, ControllerName, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "controller", Image: o.Images.Aware, Args: args,
				Ports: []corev1.ContainerPort{containerPort("metrics", ControllerMetricsPort), containerPort("probes", ControllerProbePort),
					containerPort("webhook", WebhookPort)},
				Resources:       resources("500m", "512Mi"),
				Env:             []corev1.EnvVar{goMemLimit("controller")},
				LivenessProbe:   httpProbe("/healthz", ControllerProbePort),
				ReadinessProbe:  httpProbe("/readyz", ControllerProbePort),
				SecurityContext: nonRoot(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "state", MountPath: "/var/lib/aware"}},
			}},
			Volumes: []corev1.Volume{emptyDir("state")},
		}),
		service(ControllerName, ns, ComponentMPA, ports...),
	)
	if !o.Agents {
		return objs, nil
	}
	objs = append(objs,
		deployment(AgentsName, ns, ComponentMPA, AgentsName, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "agents", Image: o.Images.Aware,
				Args: []string{"agents",
					"--prometheus=" + prom,
					"--snapshots-from=" + fmt.Sprintf("http://%s.%s:%d", ControllerName, ns, ControllerMetricsPort),
					"--influx-url=" + influx,
					"--dir=/var/lib/aware/agents",
					"--step=" + o.Step.String(),
					"--metrics-addr=:" + strconv.Itoa(AgentsMetricsPort),
					"--probe-addr=:" + strconv.Itoa(AgentsProbePort),
				},
				Ports:           []corev1.ContainerPort{containerPort("metrics", AgentsMetricsPort), containerPort("probes", AgentsProbePort)},
				Resources:       resources("1", "1Gi"),
				Env:             []corev1.EnvVar{goMemLimit("agents")},
				LivenessProbe:   httpProbe("/healthz", AgentsProbePort),
				ReadinessProbe:  httpProbe("/readyz", AgentsProbePort),
				SecurityContext: nonRoot(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "state", MountPath: "/var/lib/aware"}},
			}},
			Volumes: []corev1.Volume{emptyDir("state")},
		}),
		service(AgentsName, ns, ComponentMPA, port("metrics", AgentsMetricsPort)),
	)
	return objs, nil
}

// goMemLimit sets the Go runtime's soft memory limit of container to its
// memory limit, so that the garbage collector works harder near it instead
// of letting the heap grow to twice the live data (GOGC's default) and the
// container be OOM-killed: the controller's live heap at 4000 MPAs is
// about 200 MiB, its RSS without the limit about 600 MiB
// (docs/reliability.md, "Growth").
func goMemLimit(container string) corev1.EnvVar {
	return corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
		ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: container, Resource: "limits.memory", Divisor: resource.MustParse("1")}}}
}

// rbac binds role's rules, in a cluster role named name, to the service
// account name in ns.
func rbac(name, ns string, role *rbacv1.ClusterRole) []client.Object {
	return clusterRBAC(name, ns, ComponentMPA, role.Rules)
}
