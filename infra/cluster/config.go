package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// kwokStages are kwok's default node and pod stages plus in-place resize
// (see the file's header).
//
//go:embed kwok.yaml
var kwokStages []byte

// writeKubeconfig writes a kubeconfig for id against server.
func writeKubeconfig(path, server, caCert string, id client) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: aware-local
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: aware-local
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: aware-local
  context:
    cluster: aware-local
    user: aware-local
current-context: aware-local
`, server, caCert, id.cert, id.key)
	if err := atomicfile.Write(path, []byte(kc), 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// writeSchedulerConfig writes a KubeSchedulerConfiguration with a client rate
// high enough to place a thousand pods in seconds.
func writeSchedulerConfig(path, kubeconfig string) error {
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`, kubeconfig)
	return os.WriteFile(path, []byte(cfg), 0o644)
}

// nodeName is the name of fake node i.
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// createNodes registers cfg.Nodes fake nodes of cfg's capacity that kwok
// manages (by annotation), of the architectures cfg.Archs in turn, leaving
// existing ones alone.
func (c *Cluster) createNodes(ctx context.Context, hc *http.Client, cfg Config) error {
	archs := cfg.Archs
	for i := range cfg.Nodes {
		node := corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        nodeName(i),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": nodeName(i), "kubernetes.io/os": "linux", "kubernetes.io/arch": archs[i%len(archs)]},
			},
			Status: corev1.NodeStatus{
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(int64(cfg.NodeCPU), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(cfg.NodeMemory, resource.BinarySI),
					corev1.ResourcePods:   *resource.NewQuantity(int64(cfg.PodsPerNode), resource.DecimalSI),
				},
			},
		}
		node.Status.Allocatable = node.Status.Capacity
		code, err := apiDo(ctx, hc, http.MethodPost, c.Server+"/api/v1/nodes", node, nil)
		if err != nil && code != http.StatusConflict {
			return fmt.Errorf("cluster: creating node %s: %w", node.Name, err)
		}
	}
	return nil
}

// waitNodesReady waits until kwok has marked n nodes Ready.
func (c *Cluster) waitNodesReady(ctx context.Context, hc *http.Client, n int) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list corev1.NodeList
		_, err := apiDo(ctx, hc, http.MethodGet, c.Server+"/api/v1/nodes?labelSelector=type%3Dkwok", nil, &list)
		ready := 0
		if err == nil {
			for _, node := range list.Items {
				for _, cond := range node.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%d of %d", ready, n)
			if err != nil {
				msg = err.Error()
			}
			return fmt.Errorf("cluster: nodes not Ready after 60 s (%s); see %s", msg, filepath.Join(c.dir, "logs", "kwok.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// UserKubeconfig writes dir/<name>.kubeconfig for a user with a client
// certificate of the cluster's CA (CommonName user, organisations groups),
// and returns its path. The user has no rights until RBAC grants them; tests
// use it to run a component with exactly its ClusterRole.
func (c *Cluster) UserKubeconfig(name, user string, groups ...string) (string, error) {
	if name == "" || user == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("cluster: user kubeconfig: bad name %q or user %q", name, user)
	}
	p := pkiAt(filepath.Join(c.dir, "pki"))
	id, err := p.client("user-"+name, user, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	if err := writeKubeconfig(path, c.Server, p.caCert, id); err != nil {
		return "", err
	}
	return path, nil
}
