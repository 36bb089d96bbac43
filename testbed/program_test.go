package testbed_test

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// registered is one resource the program registered with the mocks.
type registered struct {
	token, name, urn string
	inputs           resource.PropertyMap
	deps             []string
	provider         string
	version          string
}

// mocks records every resource; objects get their inputs as outputs.
type mocks struct {
	mu  sync.Mutex
	res []registered
}

func (m *mocks) NewResource(a pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := registered{token: a.TypeToken, name: a.Name, inputs: a.Inputs, provider: a.Provider}
	if a.RegisterRPC != nil {
		r.deps = a.RegisterRPC.GetDependencies()
		r.version = a.RegisterRPC.GetVersion()
		r.urn = a.RegisterRPC.GetType() + "::" + a.Name
	}
	m.res = append(m.res, r)
	out := a.Inputs
	if a.TypeToken == testbed.TokenGKECluster {
		out = a.Inputs.Copy()
		out["name"] = resource.NewStringProperty(a.Name)
		out["endpoint"] = resource.NewStringProperty("34.1.2.3")
		out["masterAuth"] = resource.NewObjectProperty(resource.PropertyMap{"clusterCaCertificate": resource.NewStringProperty("Q0EK")})
	}
	return a.Name + "-id", out, nil
}

func (m *mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *mocks) byToken(token string) []registered {
	var out []registered
	for _, r := range m.res {
		if r.token == token {
			out = append(out, r)
		}
	}
	return out
}

func (m *mocks) find(token, name string) (registered, bool) {
	for _, r := range m.res {
		if r.token == token && r.name == name {
			return r, true
		}
	}
	return registered{}, false
}

func run(t *testing.T, cfg testbed.Config) (*mocks, map[string]any) {
	t.Helper()
	m := &mocks{}
	outputs := map[string]any{}
	// RunErr does not wait for applies: the WaitGroup does.
	var wg sync.WaitGroup
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		tb, err := testbed.Deploy(ctx, cfg)
		if err != nil {
			return err
		}
		wg.Add(1)
		pulumi.All(tb.Apps.Count, tb.Apps.Namespace, tb.MPA.Controller).ApplyT(func(v []any) error {
			defer wg.Done()
			outputs["apps"], outputs["appsNamespace"], outputs["controller"] = v[0], v[1], v[2]
			return nil
		})
		return nil
	}, pulumi.WithMocks("aware-testbed", "test", m))
	require.NoError(t, err)
	wg.Wait()
	return m, outputs
}

func config(target testbed.Target, apps int) testbed.Config {
	cfg := testbed.DefaultConfig()
	cfg.Target, cfg.Kubeconfig, cfg.Apps = target, "/tmp/kubeconfig", apps
	cfg.Credentials = manifests.Credentials{ObjectStoreAccessKey: "a", ObjectStoreSecretKey: "s", PostgresPassword: "p"}
	return cfg
}

func TestDeployKubeconfigTarget(t *testing.T) {
	m, out := run(t, config(testbed.TargetKubeconfig, 20))
	assert.Equal(t, 20, out["apps"])
	assert.Equal(t, "http://aware-controller.aware-system:8080", out["controller"])

	count := map[string]int{}
	for _, r := range m.res {
		count[r.token]++
	}
	assert.Equal(t, 1, count["pulumi:providers:kubernetes"])
	assert.Equal(t, 20, count["kubernetes:autoscaling.aware.dev/v1alpha1:MultidimPodAutoscaler"])
	assert.Equal(t, 20+6, count["kubernetes:apps/v1:Deployment"], "apps + controller, agents, prometheus, kube-state-metrics, metrics-server, grafana")
	assert.Equal(t, 20, count["kubernetes:batch/v1:Job"])
	assert.Equal(t, 3, count["kubernetes:apps/v1:StatefulSet"])
	assert.Equal(t, 2, count["kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"], "the MPA and its checkpoints")
	assert.Equal(t, 1, count["kubernetes:apiregistration.k8s.io/v1:APIService"])
	for _, kind := range []string{"Namespaces", "MPA", "TrajectoryDB", "ExternalServices", "Monitoring", "Apps", "Load", "Dashboards"} {
		assert.Equal(t, 1, count["aware:testbed:"+kind], kind)
	}

	// Every Kubernetes object goes through the stack's provider.
	for _, r := range m.res {
		if strings.HasPrefix(r.token, "kubernetes:") {
			require.Contains(t, r.provider, "pulumi:providers:kubernetes::cluster", "%s %s", r.token, r.name)
		}
	}

	// The MPAs wait for the CRD and the controller (its webhook), and for
	// the apps' secrets; the load waits for the apps.
	mpa := m.byToken("kubernetes:autoscaling.aware.dev/v1alpha1:MultidimPodAutoscaler")[0]
	deps := strings.Join(mpa.deps, "\n")
	assert.Contains(t, deps, "CustomResourceDefinition::multidimpodautoscalers.autoscaling.aware.dev")
	assert.Contains(t, deps, "Deployment::aware-system/aware-controller")
	assert.Contains(t, deps, "Secret::aware-apps/aware-database")
	job, ok := m.find("kubernetes:batch/v1:Job", "aware-apps/load-app-0003")
	require.True(t, ok)
	for _, kind := range []string{"Deployment", "Service", "MultidimPodAutoscaler"} {
		assert.Contains(t, job.deps, "urn:pulumi:test::aware-testbed::aware:testbed:Apps$kubernetes:"+map[string]string{
			"Deployment": "apps/v1", "Service": "core/v1", "MultidimPodAutoscaler": "autoscaling.aware.dev/v1alpha1"}[kind]+":"+kind+"::aware-apps/app-0003")
	}
	for _, d := range job.deps {
		assert.NotContains(t, d, "app-0004", "a load Job waits for its own app only")
	}

	// The provider waits for the shared components, not for the apps and
	// their load.
	skip := func(r registered) string {
		a := r.inputs["metadata"].ObjectValue()["annotations"]
		if !a.IsObject() {
			return ""
		}
		return a.ObjectValue()["pulumi.com/skipAwait"].StringValue()
	}
	app, ok := m.find("kubernetes:apps/v1:Deployment", "aware-apps/app-0001")
	require.True(t, ok)
	assert.Equal(t, "true", skip(app))
	assert.Equal(t, "true", skip(job))
	svc, ok := m.find("kubernetes:core/v1:Service", "aware-apps/app-0001")
	require.True(t, ok)
	assert.Equal(t, "true", skip(svc), "an app's Service does not wait for pods")

	// The controller's arguments and RBAC.
	ctrl, ok := m.find("kubernetes:apps/v1:Deployment", "aware-system/aware-controller")
	require.True(t, ok)
	assert.Empty(t, skip(ctrl))
	args := ctrl.inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["containers"].ArrayValue()[0].ObjectValue()["args"].ArrayValue()
	var flags []string
	for _, a := range args {
		flags = append(flags, a.StringValue())
	}
	assert.Contains(t, flags, "--prometheus=http://prometheus.aware-system:9090")
	assert.Contains(t, flags, "--influx-url=http://influxdb.aware-system:8086")
	assert.Contains(t, flags, "--webhook-service=aware-system/aware-controller")
	role, ok := m.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "aware-controller")
	require.True(t, ok)
	assert.Contains(t, role.inputs["rules"].String(), "multidimpodautoscalers")
	_, ok = m.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "aware-controller")
	assert.True(t, ok)

	// Prometheus scrapes the workloads, cAdvisor, kube-state-metrics and the controller.
	cm, ok := m.find("kubernetes:core/v1:ConfigMap", "aware-system/prometheus")
	require.True(t, ok)
	promYAML := cm.inputs["data"].ObjectValue()["prometheus.yml"].StringValue()
	for _, job := range []string{"job_name: workloads", "job_name: cadvisor", "job_name: kube-state-metrics", "aware-controller.aware-system:8080"} {
		assert.Contains(t, promYAML, job)
	}
}

func TestDeployLocalTarget(t *testing.T) {
	m, out := run(t, config(testbed.TargetLocal, 1000))
	assert.Equal(t, 1000, out["apps"])
	assert.Equal(t, "", out["controller"], "the controller runs outside the local cluster")
	count := map[string]int{}
	for _, r := range m.res {
		count[r.token]++
	}
	assert.Equal(t, 1000, count["kubernetes:apps/v1:Deployment"], "the apps only")
	assert.Equal(t, 1000, count["kubernetes:autoscaling.aware.dev/v1alpha1:MultidimPodAutoscaler"])
	assert.Equal(t, 1000, count["kubernetes:core/v1:Service"])
	assert.Zero(t, count["kubernetes:batch/v1:Job"])
	assert.Zero(t, count["kubernetes:apps/v1:StatefulSet"])
	assert.Zero(t, count["aware:testbed:Monitoring"])
	assert.Zero(t, count["aware:testbed:Dashboards"])
	assert.Equal(t, 2, count["kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"], "the controller's and the agents', for the service accounts they run as")
}

func TestDeployRefusesBadConfig(t *testing.T) {
	cfg := config("aws", 5000)
	cfg.Kubeconfig = ""
	cfg.Credentials = manifests.Credentials{}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := testbed.Deploy(ctx, cfg)
		return err
	}, pulumi.WithMocks("aware-testbed", "test", &mocks{}))
	require.Error(t, err)
	for _, want := range []string{`target "aws" is not one of local, kubeconfig, kind, gke`, "kubeconfig: the aws target needs", "apps 5000", "postgresPassword is empty"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestTargetConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*testbed.Config)
		want []string
	}{
		{"gke with a kubeconfig", func(c *testbed.Config) { c.Target = testbed.TargetGKE }, []string{`kubeconfig "/tmp/kubeconfig": the gke target makes its own cluster`}},
		{"gke fields", func(c *testbed.Config) {
			c.Target, c.Kubeconfig = testbed.TargetGKE, ""
			c.GKE = testbed.GKEConfig{MachineType: "m1-huge", Nodes: -1, DiskGB: 10}
		}, []string{"gke.location: empty", `gke.machineType "m1-huge": not one of e2-standard-4`, "gke.nodes -1", "gke.diskGB 10"}},
		{"kind fields", func(c *testbed.Config) {
			c.Target = testbed.TargetKind
			c.Kind = testbed.KindConfig{Workers: 17}
		}, []string{"kind.nodeImage: empty", "kind.workers 17"}},
		{"update mode", func(c *testbed.Config) { c.Options.AppOptions.UpdateMode = "Sometimes" }, []string{`updateMode "Sometimes": not one of Off, Initial, Recreate, InPlaceOrRecreate`}},
		{"time scale not finite", func(c *testbed.Config) { c.TimeScale = math.Inf(1) }, []string{"timeScale +Inf: want a positive finite number"}},
		{"time scale zero", func(c *testbed.Config) { c.TimeScale = 0 }, []string{"timeScale 0: want a positive finite number"}},
		{"time scale off the local target", func(c *testbed.Config) { c.TimeScale = 1 }, []string{"timeScale 1: only the local target (a digital twin) runs accelerated time; the kubeconfig target runs in real time"}},
		{"time scale on kind", func(c *testbed.Config) { c.Target, c.TimeScale = testbed.TargetKind, 15 }, []string{"timeScale 15: only the local target", "the kind target runs in real time"}},
		{"local clock", func(c *testbed.Config) {
			c.Target, c.Options.Step, c.TimeScale = testbed.TargetLocal, 2*time.Second, 10
		}, []string{"timeScale 10 with step 2s on the local target: local: --step 2s and --time-scale 10: the twin ticks every 666.666666ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(testbed.TargetKubeconfig, 5)
			tc.edit(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	for _, target := range []testbed.Target{testbed.TargetKind, testbed.TargetKubeconfig, testbed.TargetLocal} {
		require.NoError(t, config(target, 5).Validate(), target)
	}
	fast := config(testbed.TargetLocal, 5)
	fast.Options.Step, fast.TimeScale = 2*time.Second, 15 // 30 s steps at 15×
	require.NoError(t, fast.Validate())
	gke := config(testbed.TargetGKE, 5)
	gke.Kubeconfig = ""
	require.NoError(t, gke.Validate())
}

func TestDeployKindTarget(t *testing.T) {
	cfg := config(testbed.TargetKind, 5)
	const ref = "ghcr.io/aware-autoscaler/aware:0123456789ab"
	cfg.Options.Images.Aware = ref
	m, out := run(t, cfg)
	assert.Equal(t, 5, out["apps"])
	count := map[string]int{}
	for _, r := range m.res {
		count[r.token]++
	}
	assert.Equal(t, 5+6, count["kubernetes:apps/v1:Deployment"], "a kind cluster runs every component as pods")
	assert.Equal(t, 5, count["kubernetes:batch/v1:Job"])
	assert.Zero(t, count[testbed.TokenGKECluster])
	image := func(r registered) string {
		return r.inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["containers"].ArrayValue()[0].ObjectValue()["image"].StringValue()
	}
	for _, name := range []string{"aware-apps/app-0001", "aware-system/aware-controller", "aware-system/aware-agents"} {
		d, ok := m.find("kubernetes:apps/v1:Deployment", name)
		require.True(t, ok, name)
		assert.Equal(t, ref, image(d), "%s runs the image loaded into the nodes", name)
	}
	assert.Equal(t, ref, image(m.byToken("kubernetes:batch/v1:Job")[0]))
}

func TestDeployGKETarget(t *testing.T) {
	cfg := config(testbed.TargetGKE, 20)
	cfg.Kubeconfig = ""
	m, _ := run(t, cfg)
	clusters, pools := m.byToken(testbed.TokenGKECluster), m.byToken(testbed.TokenGKENodePool)
	require.Len(t, clusters, 1)
	require.Len(t, pools, 1)
	c, p := clusters[0], pools[0]
	assert.Equal(t, "aware-test", c.name)
	assert.Equal(t, testbed.GCPPluginVersion, c.version, "the gcp provider's version is pinned")
	assert.Equal(t, testbed.GCPPluginVersion, p.version)
	assert.Equal(t, "us-central1-a", c.inputs["location"].StringValue())
	assert.True(t, c.inputs["removeDefaultNodePool"].BoolValue())
	assert.False(t, c.inputs["deletionProtection"].BoolValue(), "down must be able to delete it")

	o, err := cfg.Resolve()
	require.NoError(t, err)
	sets, err := manifests.Build(o, cfg.Credentials)
	require.NoError(t, err)
	nodes := testbed.GKENodes(cfg.GKE, sets)
	assert.Equal(t, float64(nodes), p.inputs["nodeCount"].NumberValue())
	assert.Equal(t, "e2-standard-8", p.inputs["nodeConfig"].ObjectValue()["machineType"].StringValue())
	assert.Contains(t, strings.Join(p.deps, "\n"), "gcp:container/cluster:Cluster::aware-test", "the pool waits for its cluster")

	prov, ok := m.find("pulumi:providers:kubernetes", "cluster")
	require.True(t, ok)
	assert.Contains(t, strings.Join(prov.deps, "\n"), "gcp:container/nodePool:NodePool::aware-test", "objects go to the cluster once it has nodes")
	kc := prov.inputs["kubeconfig"]
	require.True(t, kc.IsSecret(), "the kubeconfig is a secret")
	text := kc.SecretValue().Element.StringValue()
	assert.Contains(t, text, "server: https://34.1.2.3")
	assert.Contains(t, text, "certificate-authority-data: Q0EK")
	assert.Contains(t, text, "command: gke-gcloud-auth-plugin")

	count := map[string]int{}
	for _, r := range m.res {
		count[r.token]++
	}
	assert.Equal(t, 20+6, count["kubernetes:apps/v1:Deployment"])
	assert.Equal(t, 20, count["kubernetes:autoscaling.aware.dev/v1alpha1:MultidimPodAutoscaler"])
}

func TestGKESizingAndCost(t *testing.T) {
	cpu, mem := testbed.Allocatable(testbed.MachineTypes[1])
	assert.InDelta(t, 7.91, cpu, 0.001, "e2-standard-8: 8 vCPU less 90m")
	assert.InDelta(t, 32-3.56-100.0/1024, mem, 0.001, "32 GiB less 3.56 GiB and the eviction threshold")

	cfg := config(testbed.TargetGKE, 20)
	cfg.Kubeconfig = ""
	o, err := cfg.Resolve()
	require.NoError(t, err)
	sets, err := manifests.Build(o, cfg.Credentials)
	require.NoError(t, err)
	dcpu, dmem, pods := testbed.Demand(sets)
	require.Positive(t, dcpu)
	require.Positive(t, dmem)
	require.Greater(t, pods, 20)
	n := testbed.GKENodes(cfg.GKE, sets)
	assert.GreaterOrEqual(t, float64(n)*cpu, 2*dcpu, "twice the CPU requests fit")
	assert.GreaterOrEqual(t, float64(n)*mem, 2*dmem, "twice the memory requests fit")
	assert.Less(t, float64(n-1)*cpu, 2*dcpu+cpu*3, "not oversized")

	cost := testbed.GKECost(cfg.GKE, sets)
	assert.Equal(t, n, cost.Nodes)
	assert.InDelta(t, float64(n)*0.268+float64(n)*100*0.10/730+0.10, cost.Total(), 1e-9)

	regional := cfg.GKE
	regional.Location = "us-central1"
	assert.Equal(t, 3*testbed.GKENodes(regional, sets), testbed.GKECost(regional, sets).Nodes, "a regional pool's count is per zone")
	fixed := cfg.GKE
	fixed.Nodes = 4
	assert.Equal(t, 4, testbed.GKENodes(fixed, sets))
}

func TestPoolSizeIsTheGeneratorsPool(t *testing.T) {
	assert.Equal(t, generator.DefaultOptions().Apps, testbed.PoolSize)
}

func TestSelectApps(t *testing.T) {
	cfg := config(testbed.TargetKubeconfig, 10)
	cfg.SelectSeed = 1
	a, err := cfg.Resolve()
	require.NoError(t, err)
	b, err := cfg.Resolve()
	require.NoError(t, err)
	require.Len(t, a.Apps, 10)
	var names []string
	for i := range a.Apps {
		assert.Equal(t, a.Apps[i].Name(), b.Apps[i].Name(), "same seed, same apps")
		names = append(names, a.Apps[i].Name())
	}
	assert.IsIncreasing(t, names)
	cfg.SelectSeed = 0
	first, err := cfg.Resolve()
	require.NoError(t, err)
	assert.Equal(t, "app-0001", first.Apps[0].Name())
	assert.Equal(t, "app-0010", first.Apps[9].Name())
	cfg.SelectSeed = 2
	c, err := cfg.Resolve()
	require.NoError(t, err)
	assert.NotEqual(t, a.Apps[0].Name()+a.Apps[1].Name(), c.Apps[0].Name()+c.Apps[1].Name(), "another seed, other apps")
}
