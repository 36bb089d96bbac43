package testbed

import (
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// Component is what every testbed component holds: its Kubernetes objects
// by manifests.Key. Give a component pulumi.Providers(kubernetesProvider)
// for its objects to go to that cluster. A component of the testbed (or
// of a program that adds one to it, docs/extending.md) embeds Component,
// adds its outputs as fields, and registers itself with Register.
type Component struct {
	pulumi.ResourceState
	// Objects are the component's resources by manifests.Key.
	Objects map[string]*Object
}

// Register registers c as the component aware:testbed:<kind> named name,
// with objs as its children (each a Kubernetes object of the provider in
// opts) and outputs as its registered outputs. deps (Args.DependsOn) are
// the dependencies of the component and of each of its objects: a
// component's dependencies do not hold back its children by themselves.
func (c *Component) Register(ctx *pulumi.Context, kind, name string, deps []pulumi.Resource, objs []client.Object, outputs pulumi.Map, opts ...pulumi.ResourceOption) error {
	return c.registerEach(ctx, kind, name, deps, objs, outputs, opts, nil)
}

// registerEach is Register with each object's own dependencies besides
// the component's (objDeps may be nil).
func (c *Component) registerEach(ctx *pulumi.Context, kind, name string, deps []pulumi.Resource, objs []client.Object, outputs pulumi.Map, opts []pulumi.ResourceOption, objDeps func(client.Object) []pulumi.Resource) error {
	if len(deps) > 0 {
		opts = append(opts, pulumi.DependsOn(deps))
	}
	if err := ctx.RegisterComponentResource(typeToken(kind), name, c, opts...); err != nil {
		return err
	}
	c.Objects = make(map[string]*Object, len(objs))
	child := []pulumi.ResourceOption{pulumi.Parent(c)}
	if len(deps) > 0 {
		child = append(child, pulumi.DependsOn(deps))
	}
	for _, obj := range objs {
		o := child
		if objDeps != nil {
			if extra := objDeps(obj); len(extra) > 0 {
				o = append(slices.Clip(child), pulumi.DependsOn(extra))
			}
		}
		r, err := registerObject(ctx, obj, o...)
		if err != nil {
			return err
		}
		c.Objects[manifests.Key(obj)] = r
	}
	return ctx.RegisterResourceOutputs(c, outputs)
}

// Args carry a component's options: Options must have been through
// manifests.Options.WithDefaults.
type Args struct {
	Options manifests.Options
	// DependsOn are the resources the component and each of its objects
	// wait for.
	DependsOn []pulumi.Resource
}

// MPA is the MultidimPodAutoscaler CRD, the controller with its RBAC and
// webhook, and the agent runner.
type MPA struct {
	Component
	// Controller is the controller's metrics address in the cluster
	// (empty when the controller runs outside it).
	Controller pulumi.StringOutput `pulumi:"controller"`
}

// NewMPA registers the MPA component.
func NewMPA(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*MPA, error) {
	objs, err := manifests.MPA(args.Options)
	if err != nil {
		return nil, err
	}
	c := &MPA{Controller: pulumi.String("").ToStringOutput()}
	if args.Options.Components.Controller {
		c.Controller = pulumi.Sprintf("http://%s.%s:%d", manifests.ControllerName, args.Options.Namespace, manifests.ControllerMetricsPort)
	}
	return c, c.Register(ctx, "MPA", name, args.DependsOn, objs, pulumi.Map{"controller": c.Controller}, opts...)
}

// Monitoring is Prometheus, kube-state-metrics and metrics-server.
type Monitoring struct {
	Component
	// Prometheus is Prometheus's URL in the cluster.
	Prometheus pulumi.StringOutput `pulumi:"prometheus"`
}

// NewMonitoring registers the Monitoring component.
func NewMonitoring(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Monitoring, error) {
	c := &Monitoring{Prometheus: pulumi.Sprintf("http://%s.%s:%d", manifests.PrometheusName, args.Options.Namespace, manifests.PrometheusPort)}
	return c, c.Register(ctx, "Monitoring", name, args.DependsOn, manifests.Monitoring(args.Options), pulumi.Map{"prometheus": c.Prometheus}, opts...)
}

// TrajectoryDB is InfluxDB, the controller's trajectory store.
type TrajectoryDB struct {
	Component
	// InfluxDB is InfluxDB's URL in the cluster.
	InfluxDB pulumi.StringOutput `pulumi:"influxdb"`
}

// NewTrajectoryDB registers the TrajectoryDB component.
func NewTrajectoryDB(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*TrajectoryDB, error) {
	c := &TrajectoryDB{InfluxDB: pulumi.Sprintf("http://%s.%s:%d", manifests.InfluxDBName, args.Options.Namespace, manifests.InfluxDBPort)}
	return c, c.Register(ctx, "TrajectoryDB", name, args.DependsOn, manifests.TrajectoryDB(args.Options), pulumi.Map{"influxdb": c.InfluxDB}, opts...)
}

// ExternalServicesArgs add the services' credentials to Args.
type ExternalServicesArgs struct {
	Args
	Credentials manifests.Credentials
}

// ExternalServices is the object store and PostgreSQL the segments use.
type ExternalServices struct {
	Component
	ObjectStore pulumi.StringOutput `pulumi:"objectStore"`
	Database    pulumi.StringOutput `pulumi:"database"`
}

// NewExternalServices registers the ExternalServices component.
func NewExternalServices(ctx *pulumi.Context, name string, args *ExternalServicesArgs, opts ...pulumi.ResourceOption) (*ExternalServices, error) {
	objs, err := manifests.ExternalServices(args.Options, args.Credentials)
	if err != nil {
		return nil, err
	}
	ns := args.Options.Namespace
	c := &ExternalServices{
		ObjectStore: pulumi.String(args.Options.AppOptions.ObjectStoreEndpoint).ToStringOutput(),
		Database:    pulumi.Sprintf("%s.%s:%d", manifests.PostgresName, ns, manifests.PostgresPort),
	}
	return c, c.Register(ctx, "ExternalServices", name, args.DependsOn, objs, pulumi.Map{"objectStore": c.ObjectStore, "database": c.Database}, opts...)
}

// Apps are the generated applications: per app its spec ConfigMap,
// Deployment, Service and MPA.
type Apps struct {
	Component
	// Count is the number of applications.
	Count pulumi.IntOutput `pulumi:"count"`
	// Namespace is the apps' namespace.
	Namespace pulumi.StringOutput `pulumi:"namespace"`
}

// skipAwaitAnnotation tells the Kubernetes provider not to wait for an
// object to become ready.
const skipAwaitAnnotation = "pulumi.com/skipAwait"

// withoutAwait returns objs with the Deployments, Services and Jobs
// annotated to skip the provider's readiness wait: the apps are the MPAs'
// to run (waiting for 1000 Deployments one by one made `up` take minutes
// per hundred apps, and a Service waits until pods back it: with every
// update slot held by such a wait, 1000 apps' `up` crawled at 0.4
// resources a second with the machine idle), and a load Job completes only
// when its replay ends.
func withoutAwait(objs []client.Object) []client.Object {
	out := make([]client.Object, len(objs))
	for i, obj := range objs {
		switch manifests.GVK(obj).Kind {
		case "Deployment", "Service", "Job":
			obj = obj.DeepCopyObject().(client.Object)
			a := obj.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[skipAwaitAnnotation] = "true"
			obj.SetAnnotations(a)
		}
		out[i] = obj
	}
	return out
}

// NewApps registers the Apps component; the provider does not wait for the
// apps' Deployments to be ready.
func NewApps(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Apps, error) {
	objs, err := manifests.Apps(args.Options)
	if err != nil {
		return nil, err
	}
	objs = withoutAwait(objs)
	c := &Apps{Count: pulumi.Int(len(args.Options.Apps)).ToIntOutput(), Namespace: pulumi.String(args.Options.AppsNamespace).ToStringOutput()}
	return c, c.Register(ctx, "Apps", name, args.DependsOn, objs, pulumi.Map{"count": c.Count, "namespace": c.Namespace}, opts...)
}

// Load is one load-generator Job per app.
type Load struct {
	Component
	// Jobs is the number of load generators.
	Jobs pulumi.IntOutput `pulumi:"jobs"`
}

// LoadArgs add the apps the load is for to Args.
type LoadArgs struct {
	Args
	Apps *Apps
}

// NewLoad registers the Load component; each Job waits for its own app's
// Deployment, Service and MPA (not for all the apps: a dependency on the
// Apps component is one on each of its 4000 objects, for every Job), and
// the provider does not wait for the Jobs to complete.
func NewLoad(ctx *pulumi.Context, name string, args *LoadArgs, opts ...pulumi.ResourceOption) (*Load, error) {
	c := &Load{Jobs: pulumi.Int(len(args.Options.Apps)).ToIntOutput()}
	ns := args.Options.AppsNamespace
	appDeps := func(obj client.Object) []pulumi.Resource {
		app := obj.GetLabels()[manifests.AppLabel]
		var deps []pulumi.Resource
		for _, kind := range []string{"Deployment", "Service", "MultidimPodAutoscaler"} {
			if r, ok := args.Apps.Objects[kind+"/"+ns+"/"+app]; ok {
				deps = append(deps, r)
			}
		}
		return deps
	}
	return c, c.registerEach(ctx, "Load", name, args.DependsOn, withoutAwait(manifests.Load(args.Options)), pulumi.Map{"jobs": c.Jobs}, opts, appDeps)
}

// Namespaces are the testbed's two namespaces.
type Namespaces struct{ Component }

// NewNamespaces registers the namespaces.
func NewNamespaces(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Namespaces, error) {
	c := &Namespaces{}
	return c, c.Register(ctx, "Namespaces", name, args.DependsOn, manifests.Namespaces(args.Options), pulumi.Map{}, opts...)
}

// Dashboards is Grafana with the testbed's dashboard.
type Dashboards struct {
	Component
	// Grafana is Grafana's URL in the cluster.
	Grafana pulumi.StringOutput `pulumi:"grafana"`
}

// NewDashboards registers the Dashboards component.
func NewDashboards(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Dashboards, error) {
	c := &Dashboards{Grafana: pulumi.Sprintf("http://%s.%s:%d", manifests.GrafanaName, args.Options.Namespace, manifests.GrafanaPort)}
	return c, c.Register(ctx, "Dashboards", name, args.DependsOn, manifests.Dashboards(args.Options), pulumi.Map{"grafana": c.Grafana}, opts...)
}
