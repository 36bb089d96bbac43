package testbed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/testbed/local"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

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
// cfg's apps and returns its admin kubeconfig.
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
	bins, err := cluster.Install(ctx, cache, cluster.DefaultVersions(), d.out())
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
		"--step=" + o.Step.String(), "--agents=" + strconv.FormatBool(o.Agents), "--webhook=" + strconv.FormatBool(o.Webhook),
		"--traces=" + d.Traces,
	}
}

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

// Status reads the stack's outputs, the local processes and the MPAs.
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
	if ep, ok := local.Running(d.localDir()); ok {
		st.Local = &ep
	}
	kc, err := s.GetConfig(ctx, Project+":"+KeyKubeconfig)
	if err != nil {
		return st, fmt.Errorf("testbed: the stack's kubeconfig: %w", err)
	}
	if out, ok := st.Outputs[OutputKubeconfig].Value.(string); ok && kc.Value == "" {
		// gke: the cluster's kubeconfig is an output of the stack.
		kc.Value = filepath.Join(d.Dir, "gke-kubeconfig")
		if err := os.WriteFile(kc.Value, []byte(out), 0o600); err != nil {
			return st, fmt.Errorf("testbed: %w", err)
		}
	}
	ctxName, _ := s.GetConfig(ctx, Project+":"+KeyContext)
	ns, _ := st.Outputs[OutputAppsNamespace].Value.(string)
	st.MPAs, st.Stages, err = countStages(ctx, kc.Value, ctxName.Value, ns)
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

// resolveApps are the apps cfg selects.
func (c Config) resolveApps() ([]generator.App, error) {
	prof, err := calibration.Default()
	if err != nil {
		return nil, err
	}
	apps, err := generator.GenerateSelected(prof, c.PoolSeed, c.Apps, c.SelectSeed)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	return apps, nil
}

func restConfig(kubeconfig, kctx string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kctx}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("testbed: kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}

// InPlaceMinor is the first Kubernetes minor version whose API servers and
// kubelets resize pods in place by default (InPlacePodVerticalScaling
// beta in 1.33, GA in 1.35).
const InPlaceMinor = 33

// checkInPlace asks the cluster its version: before InPlaceMinor the
// apps' MPAs that would resize in place are set to Recreate instead, with
// a warning (the controller would otherwise try, be refused and fall back
// on every step).
func (d *Driver) checkInPlace(ctx context.Context, cfg Config) (Config, error) {
	if cfg.Options.AppOptions.UpdateMode != "" && cfg.Options.AppOptions.UpdateMode != v1alpha1.UpdateModeInPlaceOrRecreate {
		return cfg, nil
	}
	rc, err := restConfig(cfg.Kubeconfig, cfg.Context)
	if err != nil {
		return cfg, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return cfg, fmt.Errorf("testbed: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return cfg, fmt.Errorf("testbed: the cluster's version (is it reachable?): %w", err)
	}
	if minor, ok := serverMinor(v.Major, v.Minor); ok && minor < InPlaceMinor {
		fmt.Fprintf(d.out(), "warning: the cluster runs Kubernetes %s.%s, which does not resize pods in place (1.%d and later do): the apps' MPAs use updateMode Recreate\n",
			v.Major, v.Minor, InPlaceMinor)
		cfg.Options.AppOptions.UpdateMode = v1alpha1.UpdateModeRecreate
	}
	return cfg, nil
}

// serverMinor is the minor version of a Kubernetes 1.x server ("30+" on
// some clouds is 30).
func serverMinor(major, minor string) (int, bool) {
	if major != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimRight(minor, "+"))
	return n, err == nil
}
