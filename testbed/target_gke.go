package testbed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// TargetGKE is a Google Kubernetes Engine cluster and node pool made by the
// program itself (Pulumi's gcp provider), sized from the apps.
const TargetGKE Target = "gke"

// gkeTarget: up checks the machine's Google Cloud credentials and auth
// plugin, the program makes the cluster and its node pool and deploys
// into it, down destroys the stack's resources, the cluster with them.
type gkeTarget struct{}

func (gkeTarget) name() Target { return TargetGKE }
func (gkeTarget) help() string { return "a GKE cluster made by the stack" }

func (gkeTarget) validate(cfg Config) []error {
	var errs []error
	if cfg.Kubeconfig != "" {
		errs = append(errs, fmt.Errorf("kubeconfig %q: the gke target makes its own cluster (use the kubeconfig target for an existing one)", cfg.Kubeconfig))
	}
	return append(errs, cfg.GKE.validate())
}

func (gkeTarget) forTarget(cfg Config) Config { return cfg }
func (gkeTarget) kubeconfigFromUp() bool      { return false }
func (gkeTarget) preview(Config) error        { return nil }

// cluster registers the cluster and its node pool, sized from the objects
// o deploys: the Kubernetes provider reaches it by the kubeconfig it
// exports, once it has nodes.
func (gkeTarget) cluster(ctx *pulumi.Context, cfg Config, o manifests.Options, tb *Testbed, pargs *kubernetes.ProviderArgs) ([]pulumi.ResourceOption, error) {
	sets, err := manifests.Build(o, cfg.Credentials)
	if err != nil {
		return nil, err
	}
	if tb.GKE, err = NewGKECluster(ctx, "aware-"+ctx.Stack(), cfg.GKE, sets); err != nil {
		return nil, err
	}
	pargs.Kubeconfig = tb.GKE.Kubeconfig.ToStringPtrOutput()
	ctx.Export(OutputKubeconfig, tb.GKE.Kubeconfig)
	ctx.Export(OutputNodes, tb.GKE.Nodes)
	return []pulumi.ResourceOption{pulumi.DependsOn([]pulumi.Resource{tb.GKE.NodePool})}, nil
}

func (gkeTarget) start(ctx context.Context, d *Driver, cfg Config) (Config, error) {
	return cfg, gkePreflight(ctx, d.out())
}

// plugins: the gcp provider is not part of the project's toolchain: the
// engine installs the pinned version into the driver's home.
func (gkeTarget) plugins() []plugin { return []plugin{{"gcp", GCPPluginVersion}} }

func (gkeTarget) started(context.Context, *Driver, Config) (*local.Endpoints, error) {
	return nil, nil
}

// down destroys the stack's resources: the cluster is one of them.
func (gkeTarget) down(ctx context.Context, d *Driver, s auto.Stack) error { return d.destroy(ctx, s) }

// status: the cluster's kubeconfig is an output of the stack.
func (gkeTarget) status(d *Driver, st *Status, kubeconfig string) (string, error) {
	out, ok := st.Outputs[OutputKubeconfig].Value.(string)
	if !ok || kubeconfig != "" {
		return kubeconfig, nil
	}
	kubeconfig = filepath.Join(d.Dir, "gke-kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(out), 0o600); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	return kubeconfig, nil
}

// GCPPluginVersion is the Pulumi gcp provider the gke target pins (`pulumi
// plugin install resource gcp <version>` installs it; the driver lets the
// engine fetch it for this target).
const GCPPluginVersion = "8.41.0"

// GKEConfig is the gke target's cluster: a zonal or regional GKE Standard
// cluster on the REGULAR release channel (Kubernetes with in-place
// resize) and one node pool.
type GKEConfig struct {
	// Project is the GCP project ("" is the gcp provider's gcp:project).
	Project string `json:"project"`
	// Location is a zone (one control plane and node pool zone) or a
	// region (nodes in each of its zones, three times the nodes).
	Location string `json:"location"`
	// MachineType of the nodes (one of MachineTypes).
	MachineType string `json:"machineType"`
	// Nodes of the pool; 0 sizes it from the apps (GKENodes).
	Nodes int `json:"nodes"`
	// DiskGB is each node's boot disk (pd-balanced).
	DiskGB int `json:"diskGB"`
}

// DefaultGKEConfig is a zonal cluster in us-central1-a of e2-standard-8
// nodes sized from the apps.
func DefaultGKEConfig() GKEConfig {
	return GKEConfig{Location: "us-central1-a", MachineType: "e2-standard-8", DiskGB: 100}
}

// Machine is a GCE machine type the gke target sizes nodes with, and its
// on-demand list price in us-central1 (USD per hour; Google's price list
// of 2026, without discounts: check the Pricing Calculator for yours).
type Machine struct {
	Name        string
	CPU         float64 // vCPUs
	MemoryGiB   float64
	USDPerHour  float64
	MaxPodsNode int
}

// MachineTypes are the machine types the gke target knows the price of.
var MachineTypes = []Machine{
	{"e2-standard-4", 4, 16, 0.134, 110},
	{"e2-standard-8", 8, 32, 0.268, 110},
	{"e2-standard-16", 16, 64, 0.536, 110},
	{"n2-standard-8", 8, 32, 0.388, 110},
	{"n2-standard-16", 16, 64, 0.777, 110},
}

// GKE prices besides the nodes (USD): the Standard cluster management fee
// per hour (the free tier credits one zonal cluster per billing account)
// and pd-balanced disk per GB-month.
const (
	GKEClusterFeePerHour   = 0.10
	BalancedDiskPerGBMonth = 0.10
	hoursPerMonth          = 730
)

func machine(name string) (Machine, bool) {
	i := slices.IndexFunc(MachineTypes, func(m Machine) bool { return m.Name == name })
	if i < 0 {
		return Machine{}, false
	}
	return MachineTypes[i], true
}

func (g GKEConfig) validate() error {
	var errs []error
	if g.Location == "" {
		errs = append(errs, errors.New("gke.location: empty (a zone such as us-central1-a, or a region)"))
	}
	if _, ok := machine(g.MachineType); !ok {
		names := make([]string, len(MachineTypes))
		for i, m := range MachineTypes {
			names[i] = m.Name
		}
		errs = append(errs, fmt.Errorf("gke.machineType %q: not one of %s", g.MachineType, strings.Join(names, ", ")))
	}
	if g.Nodes < 0 || g.Nodes > 1000 {
		errs = append(errs, fmt.Errorf("gke.nodes %d: must be between 0 (sized from the apps) and 1000", g.Nodes))
	}
	if g.DiskGB < 20 {
		errs = append(errs, fmt.Errorf("gke.diskGB %d: GKE needs at least 20", g.DiskGB))
	}
	return errors.Join(errs...)
}

// regional reports whether the location is a region (us-central1) rather
// than a zone (us-central1-a): a regional pool has its nodes in each of
// the region's three zones.
func (g GKEConfig) regional() bool { return strings.Count(g.Location, "-") == 1 }

// Allocatable is what GKE leaves to pods on a node of m: the kubelet's
// CPU reservation (6 % of the first core, 1 % of the second, 0.5 % of the
// next two, 0.25 % above four) and memory reservation (25 % of the first
// 4 GiB, 20 % of the next 4, 10 % of the next 8, 6 % of the next 112, and
// the 100 MiB eviction threshold).
func Allocatable(m Machine) (cpu, memGiB float64) {
	tiers := func(total float64, bounds, rates []float64) float64 {
		var reserved, lo float64
		for i, hi := range bounds {
			if total > lo {
				reserved += (min(total, hi) - lo) * rates[i]
			}
			lo = hi
		}
		if total > lo {
			reserved += (total - lo) * rates[len(rates)-1]
		}
		return reserved
	}
	cpu = m.CPU - tiers(m.CPU, []float64{1, 2, 4}, []float64{0.06, 0.01, 0.005, 0.0025})
	memGiB = m.MemoryGiB - tiers(m.MemoryGiB, []float64{4, 8, 16, 128}, []float64{0.25, 0.2, 0.1, 0.06, 0.02}) - 100.0/1024
	return cpu, memGiB
}

// Demand sums the resource requests of the pods that sets run (replicas
// of Deployments and StatefulSets, parallelism of Jobs).
func Demand(sets []manifests.Set) (cpu, memGiB float64, pods int) {
	add := func(n int32, spec corev1.PodSpec) {
		for _, c := range spec.Containers {
			cpu += float64(n) * c.Resources.Requests.Cpu().AsApproximateFloat64()
			memGiB += float64(n) * c.Resources.Requests.Memory().AsApproximateFloat64() / (1 << 30)
		}
		pods += int(n)
	}
	one := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	for _, s := range sets {
		for _, obj := range s.Objects {
			switch o := obj.(type) {
			case *appsv1.Deployment:
				add(one(o.Spec.Replicas), o.Spec.Template.Spec)
			case *appsv1.StatefulSet:
				add(one(o.Spec.Replicas), o.Spec.Template.Spec)
			case *batchv1.Job:
				add(one(o.Spec.Parallelism), o.Spec.Template.Spec)
			}
		}
	}
	return cpu, memGiB, pods
}

// gkeHeadroom is how much more than the initial requests the node pool
// holds: the autoscalers under test grow replicas and limits.
const gkeHeadroom = 2

// GKENodes is the node pool size for sets on g's machine type: twice the
// pods' requests and pod count over what a node leaves to pods, at least
// three nodes (per zone: a regional pool's count is per zone).
func GKENodes(g GKEConfig, sets []manifests.Set) int {
	if g.Nodes > 0 {
		return g.Nodes
	}
	m, _ := machine(g.MachineType)
	cpu, mem, pods := Demand(sets)
	acpu, amem := Allocatable(m)
	n := int(math.Ceil(gkeHeadroom * max(cpu/acpu, mem/amem, float64(pods)/float64(m.MaxPodsNode))))
	if g.regional() {
		n = int(math.Ceil(float64(n) / 3))
	}
	return max(3, n)
}

// Cost is the gke target's price per hour for sets: nodes, their disks and
// the cluster fee.
type Cost struct {
	Machine      Machine
	Nodes        int // in all (three zones for a regional pool)
	NodesPerHour float64
	DiskPerHour  float64
	FeePerHour   float64
}

// Total is the cost per hour.
func (c Cost) Total() float64 { return c.NodesPerHour + c.DiskPerHour + c.FeePerHour }

// GKECost prices g for sets.
func GKECost(g GKEConfig, sets []manifests.Set) Cost {
	m, _ := machine(g.MachineType)
	n := GKENodes(g, sets)
	if g.regional() {
		n *= 3
	}
	return Cost{Machine: m, Nodes: n,
		NodesPerHour: float64(n) * m.USDPerHour,
		DiskPerHour:  float64(n*g.DiskGB) * BalancedDiskPerGBMonth / hoursPerMonth,
		FeePerHour:   GKEClusterFeePerHour}
}

// GKECluster is the gke target's cluster and node pool, and a kubeconfig
// for it (a secret) that authenticates through gke-gcloud-auth-plugin.
type GKECluster struct {
	pulumi.ResourceState
	Cluster    *GCPResource
	NodePool   *GCPResource
	Kubeconfig pulumi.StringOutput `pulumi:"kubeconfig"`
	Nodes      pulumi.IntOutput    `pulumi:"nodes"`
}

// GCPResource is a resource of Pulumi's gcp provider, registered by type
// token with its inputs as the provider documents them.
type GCPResource struct {
	pulumi.CustomResourceState
	Name       pulumi.StringOutput `pulumi:"name"`
	Endpoint   pulumi.StringOutput `pulumi:"endpoint"`
	MasterAuth pulumi.AnyOutput    `pulumi:"masterAuth"`
}

// Type tokens of the gcp provider's resources the gke target makes.
const (
	TokenGKECluster  = "gcp:container/cluster:Cluster"
	TokenGKENodePool = "gcp:container/nodePool:NodePool"
)

// NewGKECluster registers the cluster (its default pool removed, REGULAR
// channel, deletion protection off so that down deletes it) and a node
// pool of GKENodes(g, sets) nodes.
func NewGKECluster(ctx *pulumi.Context, name string, g GKEConfig, sets []manifests.Set, opts ...pulumi.ResourceOption) (*GKECluster, error) {
	c := &GKECluster{}
	if err := ctx.RegisterComponentResource(typeToken("GKECluster"), name, c, opts...); err != nil {
		return nil, err
	}
	ver := []pulumi.ResourceOption{pulumi.Parent(c), pulumi.Version(GCPPluginVersion)}
	in := pulumi.Map{
		"location":              pulumi.String(g.Location),
		"initialNodeCount":      pulumi.Int(1),
		"removeDefaultNodePool": pulumi.Bool(true),
		"deletionProtection":    pulumi.Bool(false),
		"releaseChannel":        pulumi.Map{"channel": pulumi.String("REGULAR")},
	}
	if g.Project != "" {
		in["project"] = pulumi.String(g.Project)
	}
	c.Cluster = &GCPResource{}
	if err := ctx.RegisterResource(TokenGKECluster, name, in, c.Cluster, ver...); err != nil {
		return nil, err
	}
	nodes := GKENodes(g, sets)
	pin := pulumi.Map{
		"cluster":   c.Cluster.Name,
		"location":  pulumi.String(g.Location),
		"nodeCount": pulumi.Int(nodes),
		"nodeConfig": pulumi.Map{
			"machineType": pulumi.String(g.MachineType),
			"diskSizeGb":  pulumi.Int(g.DiskGB),
			"diskType":    pulumi.String("pd-balanced"),
			"oauthScopes": pulumi.StringArray{pulumi.String("https://www.googleapis.com/auth/cloud-platform")},
		},
	}
	if g.Project != "" {
		pin["project"] = pulumi.String(g.Project)
	}
	c.NodePool = &GCPResource{}
	if err := ctx.RegisterResource(TokenGKENodePool, name, pin, c.NodePool, ver...); err != nil {
		return nil, err
	}
	c.Kubeconfig = pulumi.ToSecret(pulumi.All(c.Cluster.Name, c.Cluster.Endpoint, c.Cluster.MasterAuth).ApplyT(func(v []any) string {
		var ca string
		if auth, ok := v[2].(map[string]any); ok {
			ca, _ = auth["clusterCaCertificate"].(string)
		}
		return gkeKubeconfig(v[0].(string), v[1].(string), ca)
	})).(pulumi.StringOutput)
	c.Nodes = pulumi.Int(nodes).ToIntOutput()
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{"kubeconfig": c.Kubeconfig, "nodes": c.Nodes}); err != nil {
		return nil, err
	}
	return c, nil
}

// gkeKubeconfig is a kubeconfig for the cluster at endpoint, whose users
// authenticate with gke-gcloud-auth-plugin (gcloud's credentials).
func gkeKubeconfig(name, endpoint, ca string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: https://%[2]s
    certificate-authority-data: %[3]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s
current-context: %[1]s
users:
- name: %[1]s
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: "gcloud components install gke-gcloud-auth-plugin"
      provideClusterInfo: true
`, name, endpoint, ca)
}
