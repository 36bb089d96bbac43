package deploy

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/controller/api/crd"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

var (
	//go:embed rbac/role.yaml
	controllerRole []byte
	//go:embed env-rbac/role.yaml
	envRole []byte
	//go:embed agents-rbac/role.yaml
	agentsRole []byte
)

// CRD is the MultidimPodAutoscaler CRD.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD(crd.MPA, "the MPA CRD")
}

// CheckpointCRD is the MultidimPodAutoscalerCheckpoint CRD.
func CheckpointCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD(crd.Checkpoint, "the checkpoint CRD")
}

// CRDs are every CRD the controller needs: the MPA's and its checkpoints'.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	m, err := CRD()
	if err != nil {
		return nil, err
	}
	c, err := CheckpointCRD()
	if err != nil {
		return nil, err
	}
	return []*apiextensionsv1.CustomResourceDefinition{m, c}, nil
}

func decodeCRD(data []byte, what string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var c apiextensionsv1.CustomResourceDefinition
	if err := decode(data, &c); err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", what, err)
	}
	return &c, nil
}

// ControllerRole is the controller's generated ClusterRole (aware-controller).
func ControllerRole() (*rbacv1.ClusterRole, error) { return role(controllerRole, "rbac/role.yaml") }

// EnvRole is the generated ClusterRole of the cluster environment
// (aware-env).
func EnvRole() (*rbacv1.ClusterRole, error) { return role(envRole, "env-rbac/role.yaml") }

// AgentsRole is the generated ClusterRole of the agent runner, `aware
// agents` (aware-agents).
func AgentsRole() (*rbacv1.ClusterRole, error) { return role(agentsRole, "agents-rbac/role.yaml") }

func role(data []byte, file string) (*rbacv1.ClusterRole, error) {
	var r rbacv1.ClusterRole
	if err := decode(data, &r); err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", file, err)
	}
	return &r, nil
}

// decode reads one YAML object (a leading "---" allowed) strictly: a field
// the type lacks is an error.
func decode(data []byte, obj any) error {
	return yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), obj)
}

// InstallCRDs creates the CRDs (CRDs) and waits, at most timeout, until
// they are established and the API server serves their kinds. c's scheme
// needs the apiextensions and MPA types.
func InstallCRDs(ctx context.Context, c client.Client, timeout time.Duration) error {
	defs, err := CRDs()
	if err != nil {
		return err
	}
	for _, def := range defs {
		if err := c.Create(ctx, def); err != nil {
			return fmt.Errorf("deploy: creating the CRD %s: %w", def.Name, err)
		}
	}
	lists := []client.ObjectList{&v1alpha1.MultidimPodAutoscalerList{}, &v1alpha1.MultidimPodAutoscalerCheckpointList{}}
	for i, def := range defs {
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKeyFromObject(def), &got); err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					// The API server's discovery needs a moment for the new kind.
					return c.List(ctx, lists[i], client.Limit(1)) == nil, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("deploy: the CRD %s is not served within %v: %w", def.Name, timeout, err)
		}
	}
	return nil
}

// Grant creates role and binds it to user.
func Grant(ctx context.Context, c client.Client, role *rbacv1.ClusterRole, user string) error {
	if err := c.Create(ctx, role); err != nil {
		return fmt.Errorf("deploy: creating the ClusterRole %s: %w", role.Name, err)
	}
	if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}); err != nil {
		return fmt.Errorf("deploy: binding the ClusterRole %s to %s: %w", role.Name, user, err)
	}
	return nil
}
