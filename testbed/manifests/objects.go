package manifests

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Component names: the Pulumi program's component resources and the
// app.kubernetes.io/component label of their objects.
const (
	ComponentNamespaces       = "namespaces"
	ComponentMPA              = "mpa"
	ComponentMonitoring       = "monitoring"
	ComponentTrajectoryDB     = "trajectory-db"
	ComponentExternalServices = "external-services"
	ComponentApps             = "apps"
	ComponentLoad             = "load"
	ComponentDashboards       = "dashboards"
)

// AppLabel names the app a load generator Job is for.
const AppLabel = "aware.dev/app"

// Names of the shared services, in Options.Namespace.
const (
	ControllerName       = "aware-controller"
	AgentsName           = "aware-agents"
	PrometheusName       = "prometheus"
	KubeStateMetricsName = "kube-state-metrics"
	MetricsServerName    = "metrics-server"
	InfluxDBName         = "influxdb"
	PostgresName         = "postgres"
	ObjectStoreName      = "aware-objstore"
	GrafanaName          = "grafana"
)

// Ports of the shared services.
const (
	ControllerMetricsPort = 8080
	ControllerProbePort   = 8081
	AgentsMetricsPort     = 8082
	AgentsProbePort       = 8083
	WebhookPort           = 9443
	PrometheusPort        = 9090
	KubeStateMetricsPort  = 8080
	InfluxDBPort          = 8086
	PostgresPort          = 5432
	ObjectStorePort       = 7070
	GrafanaPort           = 3000
)

// GVK returns the object's group, version and kind, read from its type
// meta (every object of this package sets it).
func GVK(obj client.Object) schema.GroupVersionKind {
	return obj.GetObjectKind().GroupVersionKind()
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func objectMeta(name, namespace, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
		"app.kubernetes.io/name":       labelValue(name),
		"app.kubernetes.io/part-of":    "aware-testbed",
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "aware-testbed",
	}}
}

// labelValue is name as a label value: characters a label may not hold
// (an RBAC name's ':') become '-', at most 63 characters, starting and
// ending with a letter or digit.
func labelValue(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	notAlnum := func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') }
	return strings.TrimFunc(string(b[:min(len(b), 63)]), notAlnum)
}

func selector(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": name}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: objectMeta(name, "", ComponentNamespaces)}
}

func serviceAccount(name, ns, component string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: objectMeta(name, ns, component)}
}

func service(name, ns, component string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: objectMeta(name, ns, component),
		Spec: corev1.ServiceSpec{Selector: selector(name), Ports: ports}}
}

func port(name string, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, TargetPort: intstr.FromInt32(p), Protocol: corev1.ProtocolTCP}
}

func containerPort(name string, p int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: p, Protocol: corev1.ProtocolTCP}
}

func resources(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
	}
}

func httpProbe(path string, p int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(p)}},
		PeriodSeconds: 10, FailureThreshold: 3}
}

// nonRoot is the security context of the project's containers (distroless
// "nonroot").
func nonRoot() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(int64(65532)),
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func deployment(name, ns, component, serviceAccount string, pod corev1.PodSpec) *appsv1.Deployment {
	m := objectMeta(name, ns, component)
	pod.ServiceAccountName = serviceAccount
	return &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector(name)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: m.Labels}, Spec: pod},
		}}
}

func statefulSet(name, ns, component string, pod corev1.PodSpec, volume string, size resource.Quantity, class string) *appsv1.StatefulSet {
	m := objectMeta(name, ns, component)
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: volume},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = ptr(class)
	}
	return &appsv1.StatefulSet{TypeMeta: typeMeta("apps/v1", "StatefulSet"), ObjectMeta: m,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr(int32(1)),
			ServiceName:          name,
			Selector:             &metav1.LabelSelector{MatchLabels: selector(name)},
			Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: m.Labels}, Spec: pod},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{pvc},
		}}
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func configMapVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
}

func ptr[T any](v T) *T { return &v }
