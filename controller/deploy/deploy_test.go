package deploy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/deploy"
)

func TestManifests(t *testing.T) {
	crd, err := deploy.CRD()
	require.NoError(t, err)
	assert.Equal(t, "multidimpodautoscalers.autoscaling.aware.dev", crd.Name)
	assert.Equal(t, "MultidimPodAutoscaler", crd.Spec.Names.Kind)
	crds, err := deploy.CRDs()
	require.NoError(t, err)
	require.Len(t, crds, 2)
	assert.Equal(t, crd, crds[0])
	assert.Equal(t, "multidimpodautoscalercheckpoints.autoscaling.aware.dev", crds[1].Name)
	assert.Equal(t, "MultidimPodAutoscalerCheckpoint", crds[1].Spec.Names.Kind)

	for _, tc := range []struct {
		name string
		get  func() (*rbacv1.ClusterRole, error)
	}{{"aware-controller", deploy.ControllerRole}, {"aware-env", deploy.EnvRole}} {
		r, err := tc.get()
		require.NoError(t, err)
		assert.Equal(t, tc.name, r.Name)
		assert.NotEmpty(t, r.Rules)
	}
}

func TestGrant(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).Build()
	role, err := deploy.EnvRole()
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, deploy.Grant(ctx, c, role, "agent"))
	var b rbacv1.ClusterRoleBinding
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "aware-env"}, &b))
	assert.Equal(t, "aware-env", b.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "agent"}}, b.Subjects)

	role, err = deploy.EnvRole()
	require.NoError(t, err)
	assert.ErrorContains(t, deploy.Grant(ctx, c, role, "agent"), "deploy: creating the ClusterRole aware-env")
}
