package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/shard"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
)

// logSteps wraps obs so that every MPA step appends "round mpa replica"
// to path, one write per line (O_APPEND: lines of concurrent steps and of
// several processes stay whole, and a SIGKILL loses none written).
func logSteps(obs autoscaler.Observer, path string, step time.Duration, replica string) (autoscaler.Observer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	return autoscaler.ObserverFunc(func(ctx context.Context, q autoscaler.Query) (gym.Metrics, error) {
		if q.MPA != "" {
			mu.Lock()
			_, _ = fmt.Fprintf(f, "%d %s/%s %s\n", q.At.Truncate(step).Unix(), q.Namespace, q.MPA, replica)
			mu.Unlock()
		}
		return obs.Observe(ctx, q)
	}), nil
}

// stepsByRound reads step logs: round → MPA → the replicas that stepped it.
func stepsByRound(t *testing.T, paths ...string) map[int64]map[string][]string {
	t.Helper()
	out := map[int64]map[string][]string{}
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			require.Len(t, fields, 3, "step log line %q", sc.Text())
			r, err := strconv.ParseInt(fields[0], 10, 64)
			require.NoError(t, err)
			if out[r] == nil {
				out[r] = map[string][]string{}
			}
			out[r][fields[1]] = append(out[r][fields[1]], fields[2])
		}
		f.Close()
	}
	return out
}

// TestShardedControllers runs three controller replicas sharing 30 MPAs
// through Leases on the local control plane, SIGKILLs one mid-run and
// later starts a replacement, and checks from the replicas' step logs that
// in no round an MPA was stepped by two replicas or twice, that no MPA
// missed more than one round from the first round every MPA was driven,
// that every replica had a share, and that the killed replica's MPAs were
// taken over.
func TestShardedControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus and three controllers")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "influxd")
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns, leaseNS = "apps", "aware-system"
	const step = 3 * time.Second

	c, admin := upControlPlane(ctx, t, bins, dir, ns)
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}))
	ctrlKubeconfig := grantRole(ctx, t, c, admin, deploy.ControllerRole)
	prof, apps := generatedApps(t, 30)
	var names []string
	for _, a := range apps {
		objs, err := generator.Build(a, generator.ManifestOptions{Namespace: ns, Recommender: v1alpha1.DefaultRecommenderName})
		require.NoError(t, err)
		for _, o := range []client.Object{objs.AppConfig, objs.Deployment, objs.MPA} {
			require.NoError(t, admin.Create(ctx, o), "%s", o.GetName())
		}
		names = append(names, ns+"/"+objs.MPA.Name)
	}
	_, prom, _ := startTwinStack(ctx, t, c, dir, ns, apps, prof)

	var logs []string
	start := func(i int) *controllerProc {
		id := "replica-" + strconv.Itoa(i)
		log := filepath.Join(dir, id+".steps")
		logs = append(logs, log)
		return startController(t, childConfig{
			Kubeconfig: ctrlKubeconfig, Step: step,
			Sources: manager.Sources{PrometheusURL: prom.URL(), StoreDir: filepath.Join(dir, "store-"+id)},
			Shard:   manager.Shard{Enabled: true, Namespace: leaseNS, Identity: id, LeaseDuration: time.Second},
			StepLog: log, MetricsAddr: "0",
		}, filepath.Join(dir, id+".log"))
	}
	procs := []*controllerProc{start(0), start(1), start(2)}
	tails := func() string {
		var b strings.Builder
		for i, p := range procs {
			fmt.Fprintf(&b, "--- replica-%d\n%s\n", i, p.tail())
		}
		return b.String()
	}
	// waitRounds waits until n more rounds have ended.
	waitRounds := func(n int) {
		until := time.Now().Truncate(step).Add(time.Duration(n+1) * step)
		select {
		case <-ctx.Done():
			t.Fatalf("timed out\n%s", tails())
		case <-time.After(time.Until(until)):
		}
	}
	// Settled: a round in which every replica stepped MPAs and every MPA
	// was stepped once.
	require.Eventually(t, func() bool {
		for _, mpas := range stepsByRound(t, logs...) {
			replicas := map[string]bool{}
			for _, by := range mpas {
				for _, r := range by {
					replicas[r] = true
				}
			}
			if len(mpas) == len(names) && len(replicas) == 3 {
				return true
			}
		}
		return false
	}, 2*time.Minute, time.Second, "three replicas share the MPAs\n%s", tails())
	waitRounds(4)

	// SIGKILL replica-1 half a second into a round (after its steps).
	time.Sleep(time.Until(time.Now().Truncate(step).Add(step + 500*time.Millisecond)))
	killedAt := time.Now()
	procs[1].kill(t)
	waitRounds(5)
	procs = append(procs, start(3)) // a replacement joins
	waitRounds(6)
	stopped := time.Now().Truncate(step) // rounds from here on may be cut short
	for _, p := range procs {
		if p.cmd.ProcessState == nil {
			p.kill(t)
		}
	}

	steps := stepsByRound(t, logs...)
	var rounds []int64
	for r := range steps {
		rounds = append(rounds, r)
	}
	slices.Sort(rounds)
	first := int64(-1)
	for _, r := range rounds {
		if len(steps[r]) == len(names) {
			first = r
			break
		}
	}
	require.NotEqual(t, int64(-1), first)
	last := stopped.Unix() - int64(step/time.Second)
	lastDriven := map[string]int64{}
	share := map[string]int{}
	killedMPAs := map[string]bool{}
	for r := first; r <= last; r += int64(step / time.Second) {
		for _, name := range names {
			by := steps[r][name]
			require.LessOrEqual(t, len(by), 1, "round %s: %s stepped by %v\n%s", time.Unix(r, 0).Format(time.TimeOnly), name, by, tails())
			if len(by) == 1 {
				if prev, ok := lastDriven[name]; ok {
					require.LessOrEqual(t, time.Duration(r-prev)*time.Second, 2*step,
						"%s missed more than one round: stepped at %s and next at %s (replica-1 killed at %s)\n%s", name,
						time.Unix(prev, 0).Format(time.TimeOnly), time.Unix(r, 0).Format(time.TimeOnly), killedAt.Format(time.TimeOnly+".000"), tails())
				}
				lastDriven[name] = r
				share[by[0]]++
				if by[0] == "replica-1" {
					killedMPAs[name] = true
				}
			}
		}
	}
	t.Logf("rounds %s to %s, steps per replica %v, replica-1 killed at %s", time.Unix(first, 0).Format(time.TimeOnly),
		time.Unix(last, 0).Format(time.TimeOnly), share, killedAt.Format(time.TimeOnly+".000"))
	for _, id := range []string{"replica-0", "replica-1", "replica-2", "replica-3"} {
		assert.Positive(t, share[id], "%s had a share", id)
	}
	require.NotEmpty(t, killedMPAs)
	for name := range killedMPAs {
		assert.Equal(t, last, lastDriven[name], "%s (replica-1's) is driven at the end", name)
	}
	// The killed replica's Lease is still there (it lapsed) or collected;
	// the live ones hold theirs.
	var leases coordinationv1.LeaseList
	require.NoError(t, admin.List(ctx, &leases, client.InNamespace(leaseNS), client.MatchingLabels{shard.GroupLabel: shard.DefaultGroup}))
	var held []string
	for _, l := range leases.Items {
		held = append(held, l.Name)
	}
	assert.Subset(t, held, []string{"replica-0", "replica-2", "replica-3"})
}
