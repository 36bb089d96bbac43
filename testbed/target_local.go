package testbed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// TargetLocal is the project's Docker-free control plane (`aware cluster
// up`): kwok nodes run no containers, so the controller, Prometheus and the
// databases run as local processes and the digital twin plays the
// workloads; the program deploys the CRD, RBAC and apps.
const TargetLocal Target = "local"

// localTarget: up starts the control plane in Dir/cluster (unless the
// config names a kubeconfig) and, after the deployment, the supervisor of
// the processes that play the cluster's pods; down stops both.
type localTarget struct{}

func (localTarget) name() Target { return TargetLocal }
func (localTarget) help() string { return "the Docker-free control plane, started in --dir" }

func (localTarget) validate(cfg Config) []error { return []error{needKubeconfig(cfg)} }

// forTarget: on the local control plane no pod runs, so only the CRD, RBAC
// and apps are deployed.
func (localTarget) forTarget(cfg Config) Config {
	cfg.Options.Components = manifests.Components{}
	return cfg
}

func (localTarget) kubeconfigFromUp() bool { return true }

func (localTarget) preview(cfg Config) error {
	if cfg.Kubeconfig == "" {
		return errors.New("preview of the local target needs --kubeconfig of a running control plane (up starts one)")
	}
	return nil
}

func (localTarget) cluster(*pulumi.Context, Config, manifests.Options, *Testbed, *kubernetes.ProviderArgs) ([]pulumi.ResourceOption, error) {
	return nil, nil
}

func (localTarget) start(ctx context.Context, d *Driver, cfg Config) (Config, error) {
	if cfg.Kubeconfig != "" {
		return cfg, nil
	}
	var err error
	cfg.Kubeconfig, err = d.startLocal(ctx, cfg)
	return cfg, err
}

func (localTarget) plugins() []plugin { return nil }

func (localTarget) started(ctx context.Context, d *Driver, cfg Config) (*local.Endpoints, error) {
	ep, err := local.Start(ctx, d.Aware, d.supervisorArgs(cfg.ForTarget()), d.localDir(), 5*time.Minute)
	if err != nil {
		return nil, err
	}
	return &ep, nil
}

// down stops the supervisor and the control plane, whose objects go with
// it, without deleting them one by one (a destroy of 1000 apps' 4000
// objects took over 20 minutes), and removes their directories.
func (localTarget) down(ctx context.Context, d *Driver, _ auto.Stack) error { return d.stopLocal(ctx) }

func (localTarget) status(d *Driver, st *Status, kubeconfig string) (string, error) {
	if ep, ok := local.Running(d.localDir()); ok {
		st.Local = &ep
	}
	return kubeconfig, nil
}

// Local-target node sizing, as in the controller benchmark: kwok nodes of
// 256 CPUs, 1 TiB and 1100 pods, as many as hold twice the initial pods
// and eight times the initial requests (autoscalers grow the pool).
const (
	localNodeCPU      = 256
	localNodeMemory   = 1 << 40
	localNodePods     = 1100
	localPodHeadroom  = 2
	localRequestsRoom = 8
)

// LocalNodes is how many kwok nodes the local target starts for apps.
func LocalNodes(apps []generator.App) int {
	var pods, cpu, mem float64
	for _, a := range apps {
		r := float64(a.Initial.Replicas)
		pods += r
		cpu += r * a.Initial.CPU
		mem += r * a.Initial.Memory
	}
	n := math.Ceil(max(pods*localPodHeadroom/localNodePods, max(cpu/localNodeCPU, mem/localNodeMemory)*localRequestsRoom))
	return max(2, int(n))
}

func (d *Driver) clusterDir() string { return filepath.Join(d.Dir, "cluster") }
func (d *Driver) localDir() string   { return filepath.Join(d.Dir, "local") }

// startLocal starts (or finds running) the local control plane sized for
// cfg's apps and returns its admin kubeconfig. The control plane's
// binaries are built on first use, after a line saying so.
func (d *Driver) startLocal(ctx context.Context, cfg Config) (string, error) {
	if cl, err := cluster.Attach(ctx, d.clusterDir()); err == nil {
		return cl.Kubeconfig, nil
	}
	o, err := cfg.resolveApps()
	if err != nil {
		return "", err
	}
	cache, err := cluster.DefaultCacheDir()
	if err != nil {
		return "", err
	}
	v := cluster.DefaultVersions()
	if _, err := cluster.Cached(ctx); errors.Is(err, cluster.ErrNotBuilt) {
		fmt.Fprintf(d.out(), "the local target's control plane is not built yet: building Kubernetes %s, etcd %s and kwok %s from the module proxy into %s, once (cold: Kubernetes about 12 minutes and 2 GB of memory, etcd about 1.5 minutes)\n",
			v.Kubernetes, v.Etcd, v.Kwok, cache)
	}
	bins, err := cluster.Install(ctx, cache, v, d.out())
	if err != nil {
		return "", err
	}
	cl, err := cluster.Up(ctx, cluster.Config{Dir: d.clusterDir(), Binaries: bins, Detach: true, Log: d.out(),
		Nodes: LocalNodes(o), NodeCPU: localNodeCPU, NodeMemory: localNodeMemory, PodsPerNode: localNodePods})
	if err != nil {
		return "", err
	}
	return cl.Kubeconfig, nil
}

// supervisorArgs are the arguments of `aware testbed local-run` for cfg.
func (d *Driver) supervisorArgs(cfg Config) []string {
	o := cfg.Options
	return []string{"testbed", "local-run",
		"--dir=" + d.localDir(), "--cluster-dir=" + d.clusterDir(),
		"--apps=" + strconv.Itoa(cfg.Apps), "--pool-seed=" + strconv.FormatInt(cfg.PoolSeed, 10),
		"--select-seed=" + strconv.FormatUint(cfg.SelectSeed, 10),
		"--namespace=" + o.Namespace, "--apps-namespace=" + o.AppsNamespace,
		"--step=" + o.Step.String(), "--time-scale=" + strconv.FormatFloat(cfg.TimeScale, 'g', -1, 64),
		"--agents=" + strconv.FormatBool(o.Agents), "--webhook=" + strconv.FormatBool(o.Webhook),
		"--traces=" + d.Traces,
	}
}

// stopLocal stops the local target's supervisor and control plane and
// removes their directories.
func (d *Driver) stopLocal(ctx context.Context) error {
	err := local.Stop(ctx, d.localDir())
	if _, serr := os.Stat(d.clusterDir()); serr == nil {
		err = errors.Join(err, cluster.Stop(ctx, d.clusterDir()))
	}
	if err != nil {
		return err
	}
	return errors.Join(os.RemoveAll(d.localDir()), os.RemoveAll(d.clusterDir()))
}
