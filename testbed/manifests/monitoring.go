package manifests

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PrometheusConfig is the testbed's prometheus.yml: the workload pods
// (annotated prometheus.io/scrape, labelled namespace and pod as the
// controller's queries expect), the kubelets' cAdvisor through the API
// server, kube-state-metrics with honor_labels (its namespace and pod
// labels are the pods', not its own), and the controller and agent runner.
func PrometheusConfig(o Options) string {
	ns := o.Namespace
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: workloads
    kubernetes_sd_configs:
      - role: pod
        namespaces:
          names: [%s]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
        action: replace
        target_label: __metrics_path__
        regex: (.+)
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        action: replace
        regex: ([^:]+)(?::\d+)?;(\d+)
        replacement: $1:$2
        target_label: __address__
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
  - job_name: cadvisor
    scheme: https
    tls_config:
      ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    authorization:
      credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token
    kubernetes_sd_configs:
      - role: node
    relabel_configs:
      - target_label: __address__
        replacement: kubernetes.default.svc:443
      - source_labels: [__meta_kubernetes_node_name]
        regex: (.+)
        target_label: __metrics_path__
        replacement: /api/v1/nodes/$1/proxy/metrics/cadvisor
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: ["%s.%s:%d"]
  - job_name: aware
    static_configs:
      - targets: ["%s.%s:%d"]
`, o.AppsNamespace, KubeStateMetricsName, ns, KubeStateMetricsPort, ControllerName, ns, ControllerMetricsPort)
	if o.Agents {
		fmt.Fprintf(&b, "      - targets: [\"%s.%s:%d\"]\n", AgentsName, ns, AgentsMetricsPort)
	}
	return b.String()
}

// Monitoring returns Prometheus (with PrometheusConfig), kube-state-metrics
// and metrics-server, each with its RBAC.
func Monitoring(o Options) []client.Object {
	ns := o.Namespace
	var objs []client.Object
	// Prometheus.
	objs = append(objs, clusterRBAC(PrometheusName, ns, ComponentMonitoring, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/proxy", "nodes/metrics", "services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{NonResourceURLs: []string{"/metrics", "/metrics/cadvisor"}, Verbs: []string{"get"}},
	})...)
	cm := &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: objectMeta(PrometheusName, ns, ComponentMonitoring),
		Data: map[string]string{"prometheus.yml": PrometheusConfig(o)}}
	objs = append(objs, cm,
		deployment(PrometheusName, ns, ComponentMonitoring, PrometheusName, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "prometheus", Image: o.Images.Prometheus,
				Args: []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
					"--storage.tsdb.retention.time=2d", "--web.listen-address=:" + strconv.Itoa(PrometheusPort)},
				Ports:          []corev1.ContainerPort{containerPort("http", PrometheusPort)},
				Resources:      resources("500m", "2Gi"),
				ReadinessProbe: httpProbe("/-/ready", PrometheusPort),
				LivenessProbe:  httpProbe("/-/healthy", PrometheusPort),
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/prometheus"},
					{Name: "data", MountPath: "/prometheus"}},
			}},
			Volumes: []corev1.Volume{configMapVolume("config", PrometheusName), emptyDir("data")},
		}),
		service(PrometheusName, ns, ComponentMonitoring, port("http", PrometheusPort)),
	)
	// kube-state-metrics: only what the controller reads (pods' limits and
	// readiness) and the objects around them.
	objs = append(objs, clusterRBAC(KubeStateMetricsName, ns, ComponentMonitoring, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "namespaces", "services"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"list", "watch"}},
	})...)
	objs = append(objs,
		deployment(KubeStateMetricsName, ns, ComponentMonitoring, KubeStateMetricsName, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "kube-state-metrics", Image: o.Images.KubeStateMetrics,
				Args:            []string{"--resources=pods,nodes,namespaces,services,deployments,replicasets", "--port=" + strconv.Itoa(KubeStateMetricsPort)},
				Ports:           []corev1.ContainerPort{containerPort("http", KubeStateMetricsPort)},
				Resources:       resources("200m", "512Mi"),
				ReadinessProbe:  httpProbe("/healthz", KubeStateMetricsPort),
				SecurityContext: nonRoot(),
			}},
		}),
		service(KubeStateMetricsName, ns, ComponentMonitoring, port("http", KubeStateMetricsPort)),
	)
	// metrics-server: the resource metrics API (kubectl top, upstream HPA).
	objs = append(objs, clusterRBAC(MetricsServerName, ns, ComponentMonitoring, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
	})...)
	objs = append(objs,
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: objectMeta(MetricsServerName+":system:auth-delegator", "", ComponentMonitoring),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: MetricsServerName, Namespace: ns}}},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
			ObjectMeta: objectMeta(MetricsServerName+"-auth-reader", "kube-system", ComponentMonitoring),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: MetricsServerName, Namespace: ns}}},
		deployment(MetricsServerName, ns, ComponentMonitoring, MetricsServerName, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "metrics-server", Image: o.Images.MetricsServer,
				Args: []string{"--cert-dir=/tmp", "--secure-port=10250", "--kubelet-preferred-address-types=InternalIP,Hostname",
					"--kubelet-use-node-status-port", "--metric-resolution=15s", "--kubelet-insecure-tls"},
				Ports:           []corev1.ContainerPort{containerPort("https", 10250)},
				Resources:       resources("100m", "200Mi"),
				SecurityContext: nonRoot(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{emptyDir("tmp")},
		}),
		func() client.Object {
			s := service(MetricsServerName, ns, ComponentMonitoring, port("https", 443))
			s.Spec.Ports[0].TargetPort = port("", 10250).TargetPort
			return s
		}(),
		apiService(MetricsServerName, ns),
	)
	return objs
}

// clusterRBAC is a service account with a cluster role of rules bound to it.
func clusterRBAC(name, ns, component string, rules []rbacv1.PolicyRule) []client.Object {
	return []client.Object{
		serviceAccount(name, ns, component),
		&rbacv1.ClusterRole{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: objectMeta(name, "", component), Rules: rules},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: objectMeta(name, "", component),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}},
	}
}

// apiService registers metrics-server's v1beta1.metrics.k8s.io. It is
// unstructured to keep k8s.io/kube-aggregator out of the build for one
// object.
func apiService(name, ns string) client.Object {
	m := objectMeta("v1beta1.metrics.k8s.io", "", ComponentMonitoring)
	labels := map[string]any{}
	for k, v := range m.Labels {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": m.Name, "labels": labels},
		"spec": map[string]any{
			"service":               map[string]any{"name": name, "namespace": ns, "port": int64(443)},
			"group":                 "metrics.k8s.io",
			"version":               "v1beta1",
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
}
