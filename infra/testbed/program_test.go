package testbed_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/testbed"
	"github.com/aware-autoscaler/aware/infra/testbed/manifests"
)

// registered is one resource the program registered with the mocks.
type registered struct {
	token, name, urn string
	inputs           resource.PropertyMap
	deps             []string
	provider         string
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
		r.urn = a.RegisterRPC.GetType() + "::" + a.Name
	}
	m.res = append(m.res, r)
	return a.Name + "-id", a.Inputs, nil
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
	assert.Equal(t, 1, count["kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"])
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
	job := m.byToken("kubernetes:batch/v1:Job")[0]
	assert.Contains(t, strings.Join(job.deps, "\n"), "MultidimPodAutoscaler::aware-apps/")

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
	for _, want := range []string{`target "aws" is not one of local, kubeconfig`, "kubeconfig: the aws target needs", "apps 5000", "postgresPassword is empty"} {
		assert.Contains(t, err.Error(), want)
	}
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
