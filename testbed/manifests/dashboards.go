package manifests

import (
	_ "embed"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dashboard is the testbed's Grafana dashboard: MPAs by agent stage,
// episode rewards (from the controller and from the trajectory store),
// replicas and limits against usage per app, p99 latency (SLO
// preservation), failures, the controller's round time and status writes,
// and the agents' training.
//
//go:embed dashboards/aware.json
var Dashboard []byte

// Dashboards returns Grafana with Prometheus and InfluxDB provisioned as
// data sources (uids "prometheus" and "influxdb", as Dashboard refers to
// them) and Dashboard provisioned, anonymous viewers allowed.
func Dashboards(o Options) []client.Object {
	ns := o.Namespace
	datasources := fmt.Sprintf(`apiVersion: 1
datasources:
  - name: Prometheus
    uid: prometheus
    type: prometheus
    access: proxy
    url: http://%s.%s:%d
    isDefault: true
  - name: InfluxDB
    uid: influxdb
    type: influxdb
    access: proxy
    url: http://%s.%s:%d
    jsonData:
      dbName: aware
`, PrometheusName, ns, PrometheusPort, InfluxDBName, ns, InfluxDBPort)
	providers := `apiVersion: 1
providers:
  - name: aware
    folder: AWARE
    type: file
    options:
      path: /var/lib/grafana/dashboards
`
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: objectMeta(name, ns, ComponentDashboards), Data: data}
	}
	return []client.Object{
		cm(GrafanaName+"-datasources", map[string]string{"datasources.yaml": datasources}),
		cm(GrafanaName+"-providers", map[string]string{"providers.yaml": providers}),
		cm(GrafanaName+"-dashboards", map[string]string{"aware.json": string(Dashboard)}),
		deployment(GrafanaName, ns, ComponentDashboards, "", corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "grafana", Image: o.Images.Grafana,
				Env: []corev1.EnvVar{{Name: "GF_AUTH_ANONYMOUS_ENABLED", Value: "true"}, {Name: "GF_AUTH_ANONYMOUS_ORG_ROLE", Value: "Viewer"},
					{Name: "GF_SERVER_HTTP_PORT", Value: strconv.Itoa(GrafanaPort)}, {Name: "GF_ANALYTICS_REPORTING_ENABLED", Value: "false"}},
				Ports:          []corev1.ContainerPort{containerPort("http", GrafanaPort)},
				Resources:      resources("200m", "256Mi"),
				ReadinessProbe: httpProbe("/api/health", GrafanaPort),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "datasources", MountPath: "/etc/grafana/provisioning/datasources"},
					{Name: "providers", MountPath: "/etc/grafana/provisioning/dashboards"},
					{Name: "dashboards", MountPath: "/var/lib/grafana/dashboards"},
					{Name: "data", MountPath: "/var/lib/grafana/data"},
				},
			}},
			Volumes: []corev1.Volume{configMapVolume("datasources", GrafanaName+"-datasources"), configMapVolume("providers", GrafanaName+"-providers"),
				configMapVolume("dashboards", GrafanaName+"-dashboards"), emptyDir("data")},
		}),
		service(GrafanaName, ns, ComponentDashboards, port("http", GrafanaPort)),
	}
}
