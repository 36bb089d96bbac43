package scale

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
)

// Client rates of the benchmark's own API clients: thousands of objects
// are created at once.
const (
	adminQPS   = 500
	adminBurst = 1000
	// createWorkers create the applications' objects concurrently.
	createWorkers = 8
	// controllerUser is the identity the controller runs as, bound to its
	// ClusterRole only; agentsUser the agent runner's.
	controllerUser = "aware-controller"
	agentsUser     = "aware-agents"
)

// restConfig loads kubeconfig with the benchmark's client rates.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("scale: kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = adminQPS, adminBurst
	return rc, nil
}

// adminClient is a client of rc knowing the controller's types and CRDs.
func adminClient(rc *rest.Config) (client.Client, error) {
	s, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	return c, nil
}

// grantControllerRole binds the controller's generated ClusterRole to its
// user and returns that user's kubeconfig: the controller runs with
// exactly these rights.
func grantControllerRole(ctx context.Context, cl *cluster.Cluster, c client.Client) (string, error) {
	return grantRole(ctx, cl, c, deploy.ControllerRole, controllerUser)
}

// grantRole binds the generated ClusterRole role returns to user and
// returns that user's kubeconfig.
func grantRole(ctx context.Context, cl *cluster.Cluster, c client.Client, role func() (*rbacv1.ClusterRole, error), user string) (string, error) {
	r, err := role()
	if err != nil {
		return "", err
	}
	if err := deploy.Grant(ctx, c, r, user); err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	path, err := cl.UserKubeconfig(strings.TrimPrefix(user, "aware-"), user)
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	return path, nil
}

// createObjects creates every application's objects (ConfigMap, Deployment,
// MPA, in that order per application) with createWorkers workers; the
// first error stops the others.
func createObjects(ctx context.Context, c client.Client, objs []generator.Objects, log *slog.Logger) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(createWorkers, len(objs)) {
		wg.Go(func() {
			for i := range next {
				o := objs[i]
				for _, obj := range []client.Object{o.AppConfig, o.Deployment, o.MPA} {
					if err := c.Create(ctx, obj); err != nil {
						cancel(fmt.Errorf("scale: creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err))
						return
					}
				}
				mu.Lock()
				done++
				if done%200 == 0 {
					log.Info("bench: objects created", "apps", done, "of", len(objs))
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range objs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// pods summarises the generated applications' pods.
type pods struct {
	running, pending int
	// unschedulable counts the Pending pods the scheduler could not
	// place; why is one of its messages.
	unschedulable int
	why           string
	// resizing counts the Running pods whose last resize the kubelet
	// (kwok) has not reported yet (status.observedGeneration behind
	// metadata.generation).
	resizing int
}

// podStates counts the not terminating pods of the generated applications
// in ns by state.
func podStates(ctx context.Context, c client.Client, ns string) (pods, error) {
	var l corev1.PodList
	if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/part-of": "aware"}); err != nil {
		return pods{}, fmt.Errorf("scale: listing pods: %w", err)
	}
	var ps pods
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			ps.running++
			if p.Status.ObservedGeneration < p.Generation {
				ps.resizing++
			}
		case corev1.PodPending:
			ps.pending++
			if why, ok := target.Unschedulable(&p); ok {
				ps.unschedulable++
				ps.why = why
			}
		}
	}
	return ps, nil
}

// stallLimit is how long waitPods waits without progress while the
// scheduler reports pods Unschedulable.
const stallLimit = time.Minute

// waitPods waits until want pods run in ns; it gives up early when no pod
// started for stallLimit and the scheduler cannot place some.
func waitPods(ctx context.Context, c client.Client, ns string, want int, timeout time.Duration, log *slog.Logger) error {
	var last pods
	lastLog, progress := time.Now(), time.Now()
	err := poll(ctx, timeout, 2*time.Second, func() (bool, error) {
		ps, err := podStates(ctx, c, ns)
		if err != nil {
			return false, err
		}
		if ps.running > last.running {
			progress = time.Now()
		}
		last = ps
		if time.Since(lastLog) >= 10*time.Second {
			log.Info("bench: waiting for pods", "running", ps.running, "pending", ps.pending, "unschedulable", ps.unschedulable, "want", want)
			lastLog = time.Now()
		}
		if ps.unschedulable > 0 && time.Since(progress) > stallLimit {
			return false, fmt.Errorf("no pod started for %s and %d are Unschedulable (%s): more nodes (Config.Nodes, --nodes)", stallLimit, ps.unschedulable, ps.why)
		}
		return ps.running >= want, nil
	})
	if err != nil {
		return fmt.Errorf("scale: %d of %d pods Running: %w", last.running, want, err)
	}
	return nil
}

// poll calls cond every interval until it reports true or an error, or
// timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// logWriter turns the control plane's progress lines into log records.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimSpace(string(p)), "\n") {
		if line != "" {
			w.log.Info("cluster: " + line)
		}
	}
	return len(p), nil
}
