package testbed

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// Object is any Kubernetes object managed by the Pulumi Kubernetes
// provider, registered under the provider's type token for its kind
// (kubernetes:apps/v1:Deployment, kubernetes:core/v1:Service, and for
// custom resources kubernetes:<group>/<version>:<Kind>) with the object
// itself as its inputs. The provider applies it server-side and, for
// workloads, waits until it is ready.
type Object struct {
	pulumi.CustomResourceState
}

// Token is the provider's type token of obj's kind.
func Token(obj client.Object) string {
	gvk := manifests.GVK(obj)
	group := gvk.Group
	if group == "" {
		group = "core"
	}
	return "kubernetes:" + group + "/" + gvk.Version + ":" + gvk.Kind
}

// ResourceName is obj's Pulumi name: namespace/name, or name for cluster
// objects (the type token tells kinds apart).
func ResourceName(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

func registerObject(ctx *pulumi.Context, obj client.Object, opts ...pulumi.ResourceOption) (*Object, error) {
	m, err := manifests.ToMap(obj)
	if err != nil {
		return nil, err
	}
	var res Object
	if err := ctx.RegisterResource(Token(obj), ResourceName(obj), pulumi.ToMap(m), &res, opts...); err != nil {
		return nil, fmt.Errorf("testbed: %s: %w", manifests.Key(obj), err)
	}
	return &res, nil
}

// typeToken is the token of a testbed component, e.g. aware:testbed:MPA.
func typeToken(kind string) string { return "aware:testbed:" + kind }
