package manifests

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aware-autoscaler/aware/generator"
)

// Images are the container images of the testbed. Aware is the project's
// own image (the aware binary: controller, agent runner, workload server,
// load generator); the others are the upstream projects' images.
type Images struct {
	Aware            string `json:"aware"`
	Prometheus       string `json:"prometheus"`
	KubeStateMetrics string `json:"kubeStateMetrics"`
	MetricsServer    string `json:"metricsServer"`
	InfluxDB         string `json:"influxdb"`
	Postgres         string `json:"postgres"`
	ObjectStore      string `json:"objectStore"`
	Grafana          string `json:"grafana"`
}

// DefaultImages are pinned upstream releases and the project's image at
// the generator's tag.
func DefaultImages() Images {
	return Images{
		Aware:            generator.ImageRepository + ":" + generator.DefaultImageTag,
		Prometheus:       "quay.io/prometheus/prometheus:v3.5.0",
		KubeStateMetrics: "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.16.0",
		MetricsServer:    "registry.k8s.io/metrics-server/metrics-server:v0.8.0",
		InfluxDB:         "docker.io/library/influxdb:1.8.10",
		Postgres:         "docker.io/library/postgres:15.14",
		ObjectStore:      "docker.io/versity/versitygw:v1.8.0",
		Grafana:          "docker.io/grafana/grafana:12.1.1",
	}
}

// Options configure the testbed's objects. Zero fields take the defaults of
// DefaultOptions, except Components, Agents and Webhook, whose zero values
// mean off: start from DefaultOptions to have them on.
type Options struct {
	// Namespace holds the shared components (controller, monitoring,
	// databases); AppsNamespace the generated applications.
	Namespace     string
	AppsNamespace string
	Images        Images
	// Apps are the generated applications to deploy.
	Apps []generator.App
	// AppOptions render each app (its Image and Namespace are set from
	// Images.Aware and AppsNamespace).
	AppOptions generator.ManifestOptions
	// Trace is what the load generators replay: "synthetic" (each app's
	// seeded trace), "constant" or "poisson", or a trace file's path inside
	// the load generator's image or TraceVolume.
	Trace string
	// LoadScale multiplies each app's mean rate.
	LoadScale float64
	// LoadDuration is how much of the trace each load generator replays.
	LoadDuration time.Duration
	// Step is the controller's step (its --step and the agents').
	Step time.Duration
	// Components selects what is deployed besides the namespaces, the MPA
	// CRD with its RBAC and the apps.
	Components Components
	// Agents deploys the AWARE agent runner (`aware agents`) with the
	// controller.
	Agents bool
	// Webhook serves the admission webhook that sizes new pods.
	Webhook bool
	// StorageClass of the databases' volumes ("" is the cluster default).
	StorageClass string
	// InfluxStorage sizes the trajectory database's volume, ServiceStorage
	// the object store's and PostgreSQL's each.
	InfluxStorage, ServiceStorage resource.Quantity
}

// Components are the optional parts of the testbed. On a cluster whose
// nodes run no containers (the local control plane with kwok), the
// controller, Prometheus and the databases run as local processes instead
// and the load comes from the digital twin, so all are off.
type Components struct {
	// Controller runs the MPA controller (and the agent runner) as
	// Deployments.
	Controller       bool `json:"controller"`
	Monitoring       bool `json:"monitoring"`
	TrajectoryDB     bool `json:"trajectoryDB"`
	ExternalServices bool `json:"externalServices"`
	Load             bool `json:"load"`
	Dashboards       bool `json:"dashboards"`
}

// AllComponents turns every component on.
func AllComponents() Components {
	return Components{Controller: true, Monitoring: true, TrajectoryDB: true, ExternalServices: true, Load: true, Dashboards: true}
}

// DefaultOptions are the testbed's defaults.
func DefaultOptions() Options {
	return Options{
		Namespace:      "aware-system",
		AppsNamespace:  "aware-apps",
		Images:         DefaultImages(),
		AppOptions:     generator.DefaultManifestOptions(),
		Trace:          "synthetic",
		LoadScale:      1,
		LoadDuration:   24 * time.Hour,
		Step:           15 * time.Second,
		Components:     AllComponents(),
		Agents:         true,
		Webhook:        true,
		InfluxStorage:  resource.MustParse("10Gi"),
		ServiceStorage: resource.MustParse("5Gi"),
	}
}

// WithDefaults fills zero fields from DefaultOptions and checks the result.
func (o Options) WithDefaults() (Options, error) {
	d := DefaultOptions()
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	str(&o.Namespace, d.Namespace)
	str(&o.AppsNamespace, d.AppsNamespace)
	str(&o.Trace, d.Trace)
	str(&o.Images.Aware, d.Images.Aware)
	str(&o.Images.Prometheus, d.Images.Prometheus)
	str(&o.Images.KubeStateMetrics, d.Images.KubeStateMetrics)
	str(&o.Images.MetricsServer, d.Images.MetricsServer)
	str(&o.Images.InfluxDB, d.Images.InfluxDB)
	str(&o.Images.Postgres, d.Images.Postgres)
	str(&o.Images.ObjectStore, d.Images.ObjectStore)
	str(&o.Images.Grafana, d.Images.Grafana)
	if o.LoadScale == 0 {
		o.LoadScale = d.LoadScale
	}
	if o.LoadDuration == 0 {
		o.LoadDuration = d.LoadDuration
	}
	if o.Step == 0 {
		o.Step = d.Step
	}
	if o.InfluxStorage.IsZero() {
		o.InfluxStorage = d.InfluxStorage
	}
	if o.ServiceStorage.IsZero() {
		o.ServiceStorage = d.ServiceStorage
	}
	ad := generator.DefaultManifestOptions()
	str(&o.AppOptions.ObjectStoreSecret, ad.ObjectStoreSecret)
	str(&o.AppOptions.DatabaseSecret, ad.DatabaseSecret)
	o.AppOptions.Image = o.Images.Aware
	o.AppOptions.Namespace = o.AppsNamespace
	o.AppOptions.ObjectStoreEndpoint = fmt.Sprintf("http://%s.%s:%d", ObjectStoreName, o.Namespace, ObjectStorePort)
	return o, o.validate()
}

func (o Options) validate() error {
	var errs []error
	for _, ns := range []struct{ field, v string }{{"namespace", o.Namespace}, {"appsNamespace", o.AppsNamespace}} {
		if msgs := validation.IsDNS1123Label(ns.v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", ns.field, ns.v, msgs[0]))
		}
	}
	if o.LoadScale < 0 {
		errs = append(errs, fmt.Errorf("loadScale %g: must be positive", o.LoadScale))
	}
	if o.LoadDuration < 0 {
		errs = append(errs, fmt.Errorf("loadDuration %s: must be positive", o.LoadDuration))
	}
	if o.Step < time.Second {
		errs = append(errs, fmt.Errorf("step %s: must be at least 1s", o.Step))
	}
	seen := map[string]bool{}
	for i, a := range o.Apps {
		if seen[a.Name()] {
			errs = append(errs, fmt.Errorf("apps[%d]: %s appears twice", i, a.Name()))
		}
		seen[a.Name()] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testbed options: %w", err)
	}
	return nil
}
