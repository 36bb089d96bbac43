package testbed

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// Testbed is what Deploy registered.
type Testbed struct {
	GKE              *GKECluster // the gke target's cluster, else nil
	Provider         *kubernetes.Provider
	Namespaces       *Namespaces
	MPA              *MPA
	TrajectoryDB     *TrajectoryDB     // nil when off
	ExternalServices *ExternalServices // nil when off
	Monitoring       *Monitoring       // nil when off
	Apps             *Apps
	Load             *Load       // nil when off
	Dashboards       *Dashboards // nil when off
}

// Stack outputs.
const (
	OutputTarget        = "target"
	OutputNamespace     = "namespace"
	OutputAppsNamespace = "appsNamespace"
	OutputApps          = "apps"
	OutputController    = "controller"
	OutputPrometheus    = "prometheus"
	OutputInfluxDB      = "influxdb"
	OutputLoadJobs      = "loadJobs"
	OutputGrafana       = "grafana"
	OutputKubeconfig    = "kubeconfig" // gke: the cluster's (a secret)
	OutputNodes         = "nodes"      // gke: the node pool's size
)

// Program is Deploy as a Pulumi program.
func Program(cfg Config) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		_, err := Deploy(ctx, cfg)
		return err
	}
}

// Deploy registers the testbed of cfg: a Kubernetes provider for the
// target cluster, then the components in dependency order (namespaces;
// the MPA CRD and controller, the databases and monitoring; the apps after
// the CRD, the webhook and the apps' secrets; the load after the apps;
// the dashboards),
// and exports the stack outputs.
func Deploy(ctx *pulumi.Context, cfg Config) (*Testbed, error) {
	cfg = cfg.ForTarget()
	o, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	tb := &Testbed{}
	pargs := &kubernetes.ProviderArgs{
		Kubeconfig:            pulumi.StringPtr(cfg.Kubeconfig),
		EnableServerSideApply: pulumi.BoolPtr(true),
	}
	if cfg.Context != "" {
		pargs.Context = pulumi.StringPtr(cfg.Context)
	}
	t, _ := targetOf(cfg.Target) // resolved: valid
	popts, err := t.cluster(ctx, cfg, o, tb, pargs)
	if err != nil {
		return nil, err
	}
	if tb.Provider, err = kubernetes.NewProvider(ctx, "cluster", pargs, popts...); err != nil {
		return nil, err
	}
	args := func(deps ...pulumi.Resource) *Args { return &Args{Options: o, DependsOn: deps} }
	p := pulumi.Providers(tb.Provider)
	if tb.Namespaces, err = NewNamespaces(ctx, manifests.ComponentNamespaces, args(), p); err != nil {
		return nil, err
	}
	if tb.MPA, err = NewMPA(ctx, manifests.ComponentMPA, args(tb.Namespaces), p); err != nil {
		return nil, err
	}
	appDeps := []pulumi.Resource{tb.Namespaces, tb.MPA}
	ctx.Export(OutputController, tb.MPA.Controller)
	if o.Components.TrajectoryDB {
		if tb.TrajectoryDB, err = NewTrajectoryDB(ctx, manifests.ComponentTrajectoryDB, args(tb.Namespaces), p); err != nil {
			return nil, err
		}
		ctx.Export(OutputInfluxDB, tb.TrajectoryDB.InfluxDB)
	}
	if o.Components.ExternalServices {
		ext := &ExternalServicesArgs{Args: *args(tb.Namespaces), Credentials: cfg.Credentials}
		if tb.ExternalServices, err = NewExternalServices(ctx, manifests.ComponentExternalServices, ext, p); err != nil {
			return nil, err
		}
		appDeps = append(appDeps, tb.ExternalServices)
	}
	if o.Components.Monitoring {
		if tb.Monitoring, err = NewMonitoring(ctx, manifests.ComponentMonitoring, args(tb.Namespaces), p); err != nil {
			return nil, err
		}
		ctx.Export(OutputPrometheus, tb.Monitoring.Prometheus)
	}
	if tb.Apps, err = NewApps(ctx, manifests.ComponentApps, args(appDeps...), p); err != nil {
		return nil, err
	}
	if o.Components.Load {
		if tb.Load, err = NewLoad(ctx, manifests.ComponentLoad, &LoadArgs{Args: *args(tb.Namespaces), Apps: tb.Apps}, p); err != nil {
			return nil, err
		}
		ctx.Export(OutputLoadJobs, tb.Load.Jobs)
	}
	if o.Components.Dashboards {
		if tb.Dashboards, err = NewDashboards(ctx, manifests.ComponentDashboards, args(tb.Namespaces), p); err != nil {
			return nil, err
		}
		ctx.Export(OutputGrafana, tb.Dashboards.Grafana)
	}
	ctx.Export(OutputTarget, pulumi.String(string(cfg.Target)))
	ctx.Export(OutputNamespace, pulumi.String(o.Namespace))
	ctx.Export(OutputAppsNamespace, tb.Apps.Namespace)
	ctx.Export(OutputApps, tb.Apps.Count)
	return tb, nil
}
