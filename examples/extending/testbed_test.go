package extending_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// Cache is a testbed component of our own: memcached in the testbed's
// namespace, for the apps to share, with its address as an output.
type Cache struct {
	testbed.Component
	// Address is memcached's host:port in the cluster.
	Address pulumi.StringOutput `pulumi:"address"`
}

// CacheArgs add the cache's port to the testbed's component arguments.
type CacheArgs struct {
	testbed.Args
	Port int32
}

// cacheObjects are the cache's Kubernetes objects: typed k8s.io/api
// objects with their type meta set, as testbed/manifests builds them.
func cacheObjects(o manifests.Options, port int32) []client.Object {
	labels := map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/part-of": "aware-testbed"}
	meta := metav1.ObjectMeta{Name: "memcached", Namespace: o.Namespace, Labels: labels}
	replicas := int32(1)
	return []client.Object{
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "memcached", Image: "memcached:1.6",
						Args:  []string{"-m", "64"},
						Ports: []corev1.ContainerPort{{Name: "memcached", ContainerPort: port}},
					}}},
				},
			},
		},
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta,
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
				{Name: "memcached", Port: port, TargetPort: intstr.FromInt32(port)},
			}},
		},
	}
}

// NewCache registers the Cache component (aware:testbed:Cache).
func NewCache(ctx *pulumi.Context, name string, args *CacheArgs, opts ...pulumi.ResourceOption) (*Cache, error) {
	c := &Cache{Address: pulumi.Sprintf("memcached.%s:%d", args.Options.Namespace, args.Port)}
	return c, c.Register(ctx, "Cache", name, args.DependsOn, cacheObjects(args.Options, args.Port), pulumi.Map{"address": c.Address}, opts...)
}

// recorded is one resource the program registered with the mocks.
type recorded struct {
	token, name, parent, provider string
	deps                          []string
	inputs                        resource.PropertyMap
}

// testbedMocks record every resource; each gets its inputs as outputs.
type testbedMocks struct {
	mu  sync.Mutex
	res []recorded
}

func (m *testbedMocks) NewResource(a pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := recorded{token: a.TypeToken, name: a.Name, provider: a.Provider, inputs: a.Inputs}
	if a.RegisterRPC != nil {
		r.parent, r.deps = a.RegisterRPC.GetParent(), a.RegisterRPC.GetDependencies()
	}
	m.res = append(m.res, r)
	return a.Name + "-id", a.Inputs, nil
}

func (m *testbedMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *testbedMocks) find(token, name string) (recorded, bool) {
	for _, r := range m.res {
		if r.token == token && r.name == name {
			return r, true
		}
	}
	return recorded{}, false
}

// A program that deploys the testbed and a component of our own: the
// component's objects are registered under it, through the testbed's
// Kubernetes provider, after the testbed's namespaces, and its output
// resolves; its objects render beside the testbed's.
func TestTestbedComponent(t *testing.T) {
	cfg := testbed.DefaultConfig()
	cfg.Target, cfg.Kubeconfig, cfg.Apps = testbed.TargetKubeconfig, "/tmp/kubeconfig", 2
	cfg.Credentials = manifests.Credentials{ObjectStoreAccessKey: "a", ObjectStoreSecretKey: "s", PostgresPassword: "p"}
	o, err := cfg.ForTarget().Resolve() // the options Deploy deploys
	require.NoError(t, err)
	const port = 11211

	m := &testbedMocks{}
	var address string
	var wg sync.WaitGroup // RunErr does not wait for applies
	err = pulumi.RunErr(func(ctx *pulumi.Context) error {
		tb, err := testbed.Deploy(ctx, cfg)
		if err != nil {
			return err
		}
		args := &CacheArgs{Args: testbed.Args{Options: o, DependsOn: []pulumi.Resource{tb.Namespaces}}, Port: port}
		cache, err := NewCache(ctx, "cache", args, pulumi.Providers(tb.Provider))
		if err != nil {
			return err
		}
		ctx.Export("cache", cache.Address)
		wg.Add(1)
		cache.Address.ApplyT(func(a string) string {
			defer wg.Done()
			address = a
			return a
		})
		return nil
	}, pulumi.WithMocks(testbed.Project, "test", m))
	require.NoError(t, err)
	wg.Wait()

	_, ok := m.find("aware:testbed:Cache", "cache")
	require.True(t, ok, "the component is registered")
	const parent = "urn:pulumi:test::aware-testbed::aware:testbed:Cache::cache"
	for _, token := range []string{"kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service"} {
		r, ok := m.find(token, "aware-system/memcached")
		require.True(t, ok, "%s aware-system/memcached is registered", token)
		assert.Equal(t, parent, r.parent, "%s is the component's child", token)
		assert.Contains(t, r.provider, "pulumi:providers:kubernetes::cluster", "%s goes to the testbed's cluster", token)
		assert.Contains(t, strings.Join(r.deps, "\n"), "kubernetes:core/v1:Namespace::aware-system", "%s waits for the namespace", token)
	}
	dep, _ := m.find("kubernetes:apps/v1:Deployment", "aware-system/memcached")
	c := dep.inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["containers"].ArrayValue()[0].ObjectValue()
	assert.Equal(t, "memcached:1.6", c["image"].StringValue())
	assert.Equal(t, "memcached.aware-system:11211", address)
	_, ok = m.find("kubernetes:apps/v1:Deployment", "aware-apps/app-0002")
	assert.True(t, ok, "the testbed itself is deployed too")

	// What `kubectl apply` would take: the testbed's objects and the cache's.
	sets, err := manifests.Build(o, cfg.Credentials)
	require.NoError(t, err)
	sets = append(sets, manifests.Set{Component: "cache", Objects: cacheObjects(o, port)})
	var yaml strings.Builder
	require.NoError(t, manifests.WriteYAML(&yaml, sets))
	assert.Contains(t, yaml.String(), "# component: cache\napiVersion: apps/v1\nkind: Deployment\n")
	assert.Contains(t, yaml.String(), "image: memcached:1.6")
}
