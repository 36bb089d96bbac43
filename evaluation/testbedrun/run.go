package testbedrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// Result is one cell's outcome on the testbed, every figure read back from
// the testbed's trajectory store (InfluxDB) and the controller.
type Result struct {
	Cell string `json:"cell"`
	// Episodes are the cell's first Cell.Episodes complete episodes, in
	// the simulator's terms (train.Episode), from the stored records.
	Episodes []train.Episode `json:"episodes"`
	// Stages are the lifecycle changes the controller made, in order.
	Stages []Transition `json:"stages"`
	Health Health       `json:"health"`
	// Source says where the figures were read: the store's URL, database
	// and series.
	Source string `json:"source"`
	// Seconds is the wall time until the cell's last episode was stored.
	Seconds float64 `json:"seconds"`
	// AgentSteps are the acting steps the agent runner took for the cell
	// (its checkpointed count, controller/agents.State.Steps) and
	// AgentRounds the controller's rounds of the acting stages up to that
	// checkpoint: AgentRounds/AgentSteps controller steps per agent
	// action. Zero for a cell without an agent or a checkpoint.
	AgentSteps  int `json:"agentSteps,omitempty"`
	AgentRounds int `json:"agentRounds,omitempty"`
	// Injected is where the cell's scenario hit: the first record whose
	// step ended after the injection (nil without a scenario).
	Injected *Point `json:"injected,omitempty"`
}

// Point is a step of a cell's records: its episode, counted from the
// cell's first, and its step in the episode, both from 0.
type Point struct {
	Episode int `json:"episode"`
	Step    int `json:"step"`
}

// Options of a run.
type Options struct {
	// Prefix names the run's namespace, Prefix-<run id>: each run has its
	// own (created, and deleted after), so that its MPAs' series in the
	// store are new.
	Prefix string
	// Seed seeds the twin's measurement noise.
	Seed uint64
	// Progress, when set, receives a line per poll.
	Progress io.Writer
	Log      *slog.Logger
	// Poll is how often the store is read while waiting (default: 4 steps).
	Poll time.Duration
}

// Run runs cells on b as MPAs, all at once, until each has stored its
// episodes, and reads their figures back:
//
//  1. play: a digital twin of the cells' applications in this process, on
//     the testbed's clock, scraped by the testbed's Prometheus through its
//     file-based discovery (local.RegisterTarget) — up before any MPA;
//  2. deploy: a namespace of the run's own, and each cell's objects
//     (generator.Build under the cell's name, its arm's recommender and
//     profile);
//  3. wait: until every cell's records in the testbed's InfluxDB hold its
//     episodes, injecting each cell's scenario when its episode comes; a
//     deadline of twice the cells' expected wall time and 3 minutes ends
//     a run that does not progress, with what each cell had reached;
//  4. read: each cell's records, turned into the simulator's per-episode
//     figures, its lifecycle (the records' stages, with the reasons of the
//     controller's StageChanged Events) and completeness (the records,
//     and the controller's per-MPA count of stale recommendations);
//  5. clean up, in reverse: the namespace, the scrape target, the twin.
func Run(ctx context.Context, b *Bed, clock Clock, cells []Cell, o Options) ([]Result, error) {
	if err := b.Check(clock); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Poll <= 0 {
		o.Poll = 4 * clock.Wall()
	}
	if o.Prefix == "" {
		return nil, errors.New("testbedrun: no namespace prefix")
	}
	id := strconv.FormatInt(time.Now().UnixNano()/int64(time.Millisecond), 36)
	seen := map[string]bool{}
	for _, c := range cells {
		if err := c.validate(); err != nil {
			return nil, err
		}
		if c.Policy != nil {
			if errs := validation.IsDNS1123Label(c.Name + "-" + id); len(errs) > 0 {
				return nil, fmt.Errorf("testbedrun: cell %s: its initial policy's name %s-%s: %s", c.Name, c.Name, id, strings.Join(errs, "; "))
			}
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("testbedrun: two cells named %s", c.Name)
		}
		seen[c.Name] = true
	}
	r := &run{b: b, clock: clock, cells: cells, o: o, id: id, ns: o.Prefix + "-" + id}
	defer r.cleanup()
	phases := []struct {
		name string
		f    func(context.Context) error
	}{{"play", r.play}, {"deploy", r.deploy}, {"wait", r.wait}}
	for _, p := range phases {
		if err := p.f(ctx); err != nil {
			return nil, fmt.Errorf("testbedrun: %s (namespace %s): %w", p.name, r.ns, err)
		}
	}
	res, err := r.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: read (namespace %s): %w", r.ns, err)
	}
	return res, nil
}

type run struct {
	b     *Bed
	clock Clock
	cells []Cell
	o     Options
	ns    string
	id    string // the run's: its namespace's suffix, its policies'
	// policies are the folders of the cells' initial policies.
	policies []string

	started  time.Time
	injected map[string]time.Time
	loaded   map[string]bool // cells whose initial policy the runner has loaded
	done     map[string]time.Duration
	store    *trajectory.InfluxStore
	spool    string
	tw       *twin.Twin
	twinDone chan error
	stops    []func() error
}

// app is the store's name of a cell's MPA.
func (r *run) app(c Cell) string { return r.ns + "/" + c.Name }

// play starts the cells' twin on the testbed's clock, has the testbed's
// Prometheus scrape it, and waits until Prometheus has.
func (r *run) play(ctx context.Context) error {
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	apps := make([]sim.App, len(r.cells))
	for i, c := range r.cells {
		apps[i] = c.twinApp()
	}
	r.tw, err = twin.New(r.b.kube, apps, prof, twin.WithNamespace(r.ns), twin.WithTick(r.b.TwinTick),
		twin.WithSimStep(r.b.TwinSimStep), twin.WithSeed(r.o.Seed), twin.WithLogger(r.o.Log))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("twin metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.tw.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	r.stops = append(r.stops, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.twinDone = make(chan error, 1)
	go func() { r.twinDone <- r.tw.Run(tctx) }()
	r.stops = append(r.stops, func() error {
		stop()
		return <-r.twinDone
	})
	unregister, err := local.RegisterTarget(r.b.Endpoints.Targets, r.ns,
		[]local.FileTarget{{Targets: []string{ln.Addr().String()}, Labels: map[string]string{"instance": r.ns}}})
	if err != nil {
		return err
	}
	r.stops = append(r.stops, unregister)
	return r.scraped(ctx, `up{job="study",instance="`+r.ns+`"}`, time.Minute)
}

// scraped waits until the testbed's Prometheus answers query with a
// sample of value 1.
func (r *run) scraped(ctx context.Context, query string, within time.Duration) error {
	client, err := api.NewClient(api.Config{Address: r.b.Endpoints.Prometheus})
	if err != nil {
		return fmt.Errorf("the testbed's Prometheus (%s): %w", r.b.Endpoints.Prometheus, err)
	}
	prom := promv1.NewAPI(client)
	deadline := time.Now().Add(within)
	var last string
	for {
		v, _, err := prom.Query(ctx, query, time.Now())
		if err != nil {
			last = err.Error()
		} else if vec, ok := v.(model.Vector); ok && len(vec) == 1 && vec[0].Value == 1 {
			return nil
		} else {
			last = v.String()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the testbed's Prometheus (%s) did not scrape the twin within %s: %s gave %q", r.b.Endpoints.Prometheus, within, query, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.twinDone:
			r.twinDone <- err
			return fmt.Errorf("the twin stopped: %v", err)
		case <-time.After(r.b.TwinTick):
		}
	}
}

func (r *run) deploy(ctx context.Context) error {
	// Every record of the run's new namespace counts: its first episodes
	// begin with the first rounds, while later cells are still created.
	r.started = time.Now()
	// The initial policies go after the namespace (stops run in reverse):
	// no agent of the run is looking for its policy any more.
	r.stops = append(r.stops, func() error {
		var errs []error
		for _, d := range r.policies {
			errs = append(errs, os.RemoveAll(d))
		}
		return errors.Join(errs...)
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: map[string]string{"app.kubernetes.io/part-of": "aware-study"}}}
	if err := r.b.ctl.Create(ctx, ns); err != nil {
		return fmt.Errorf("namespace %s: %w", r.ns, err)
	}
	r.stops = append(r.stops, func() error { return r.deleteNamespace(context.Background()) })
	for _, c := range r.cells {
		policy, err := r.writePolicy(c)
		if err != nil {
			return err
		}
		objs, _, err := c.objects(r.ns, policy)
		if err != nil {
			return err
		}
		for _, obj := range []client.Object{objs.AppConfig, objs.Deployment, objs.Service, objs.MPA} {
			if err := r.b.ctl.Create(ctx, obj); err != nil {
				return fmt.Errorf("cell %s: %s %s: %w", c.Name, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
		}
	}
	return nil
}

// writePolicy writes the cell's initial policy, if any, into the agent
// runner's policies folder under a name of the run's own (removed after
// the run) and returns the name.
func (r *run) writePolicy(c Cell) (string, error) {
	if c.Policy == nil {
		return "", nil
	}
	if r.b.Endpoints.Policies == "" {
		return "", fmt.Errorf("cell %s: the testbed's agent runner has no policies folder (its endpoints name none): bring the testbed up again", c.Name)
	}
	name := c.Name + "-" + r.id
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return "", fmt.Errorf("cell %s: initial policy %q: %s", c.Name, name, strings.Join(errs, "; "))
	}
	dir := filepath.Join(r.b.Endpoints.Policies, name)
	r.policies = append(r.policies, dir)
	if err := agents.WritePolicy(dir, c.Policy.Agent, c.Policy.Kind, gym.StateDim, c.Policy.Mapping); err != nil {
		return "", fmt.Errorf("cell %s: %w", c.Name, err)
	}
	return name, nil
}

// deleteNamespace deletes the run's namespace and waits until it is gone
// (its MPAs stop stepping).
func (r *run) deleteNamespace(ctx context.Context) error {
	err := r.b.kube.CoreV1().Namespaces().Delete(ctx, r.ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting namespace %s: %w", r.ns, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := r.b.kube.CoreV1().Namespaces().Get(ctx, r.ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("namespace %s still terminating after 2m", r.ns)
}

// wait polls the store until every cell has its episodes: complete
// episodes that began after the cells were deployed.
func (r *run) wait(ctx context.Context) error {
	var err error
	r.spool, err = os.MkdirTemp("", "aware-study-spool-")
	if err != nil {
		return fmt.Errorf("store spool: %w", err)
	}
	r.store, err = trajectory.OpenInflux(ctx, r.b.Endpoints.InfluxDB, r.spool, trajectory.WithLogger(r.o.Log))
	if err != nil {
		return err
	}
	longest := 0
	for _, c := range r.cells {
		longest = max(longest, (c.Episodes+1)*episodeLength(c))
	}
	expected := time.Duration(longest) * r.clock.Wall()
	deadline := time.Now().Add(2*expected + 3*time.Minute)
	r.done = map[string]time.Duration{}
	r.injected = map[string]time.Time{}
	r.loaded = map[string]bool{}
	// A cell whose scenario is due is read every half step (polled), so
	// that its scenario hits as the episode it follows ends; the others
	// every Poll.
	fast := r.clock.Wall() / 2
	progress := make([]string, len(r.cells))
	var polled time.Time
	for {
		full := time.Since(polled) >= r.o.Poll
		if full {
			polled = time.Now()
		}
		pending := false
		for i, c := range r.cells {
			due := c.Scenario != 0 && r.injected[c.Name].IsZero()
			if !full && !due {
				continue
			}
			n, err := r.complete(ctx, c)
			if err != nil {
				return err
			}
			if n >= 1 && !r.loaded[c.Name] {
				if err := r.policyLoaded(c); err != nil {
					return err
				}
				r.loaded[c.Name] = true
			}
			if due && n >= c.InjectAfter {
				if err := r.tw.Inject(c.Name, c.Scenario); err != nil {
					return err
				}
				r.injected[c.Name], due = time.Now(), false
			}
			pending = pending || due
			if _, ok := r.done[c.Name]; !ok && n >= c.Episodes {
				r.done[c.Name] = time.Since(r.started)
			}
			progress[i] = fmt.Sprintf("%s %d/%d", c.Name, min(n, c.Episodes), c.Episodes)
		}
		if full && r.o.Progress != nil {
			fmt.Fprintf(r.o.Progress, "testbed %s: %s after %s (expected %s)\n", r.ns, summary(progress, len(r.done), len(r.cells)), time.Since(r.started).Round(time.Second), expected.Round(time.Second))
		}
		if len(r.done) == len(r.cells) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cells did not complete their episodes within %s (twice the expected %s and 3m): %s", time.Since(r.started).Round(time.Second), expected, strings.Join(progress, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.twinDone:
			r.twinDone <- err
			return fmt.Errorf("the twin stopped: %v", err)
		case <-time.After(next(pending, fast, r.o.Poll-time.Since(polled))):
		}
	}
}

// next is the wait before the next poll: half a step while a scenario is
// due, else until the next full poll.
func next(pending bool, fast, full time.Duration) time.Duration {
	if pending {
		return max(min(fast, full), time.Millisecond)
	}
	return max(full, time.Millisecond)
}

// complete is the number of the cell's complete episodes that began after
// the cells were deployed.
func (r *run) complete(ctx context.Context, c Cell) (int, error) {
	eps, err := r.store.RecentEpisodes(ctx, r.app(c), c.Episodes+1)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range eps {
		if !e.Start.Before(r.started) {
			n++
		}
	}
	return n, nil
}

func summary(progress []string, done, n int) string {
	if len(progress) <= 6 {
		return strings.Join(progress, ", ")
	}
	return fmt.Sprintf("%d of %d cells done; %s, …", done, n, strings.Join(progress[:4], ", "))
}

func episodeLength(c Cell) int {
	p := c.App.Profile
	if c.Profile != nil {
		c.Profile(&p)
	}
	p.Default()
	return p.EpisodeLength
}

// read turns each cell's records into its result.
func (r *run) read(ctx context.Context) ([]Result, error) {
	events, err := r.stageEvents(ctx)
	if err != nil {
		return nil, err
	}
	held, err := r.heldSteps(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(r.cells))
	for _, c := range r.cells {
		trajs, err := r.store.Range(ctx, r.app(c), r.started.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			return nil, err
		}
		l := episodeLength(c)
		eps, err := Episodes(trajs, l, c.Episodes)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.Name, err)
		}
		// Completeness over the span of the cell's episodes: the records
		// after them were stored while other cells finished.
		var kept []trajectory.Trajectory
		if len(trajs) > 0 {
			last := trajs[0].Episode.Episode + int64(c.Episodes)
			for _, t := range trajs {
				if t.Episode.Episode < last {
					kept = append(kept, t)
				}
			}
		}
		h := Completeness(kept, l, r.b.Clock.Wall())
		h.StaleActions, h.AwaitingFirst, h.ActionHeld = held[[2]string{c.Name, "stale"}], held[[2]string{c.Name, "first"}], held[[2]string{c.Name, "applied"}]
		res := Result{Cell: c.Name, Episodes: eps, Stages: Stages(kept, events[c.Name]), Health: h,
			Source: fmt.Sprintf("%s, database aware, series app=%s", r.b.Endpoints.InfluxDB, r.app(c)), Seconds: r.done[c.Name].Seconds()}
		if at, ok := r.injected[c.Name]; ok {
			res.Injected = injectedAt(kept, at)
		}
		if c.Recommender == AgentName {
			if res.AgentSteps, res.AgentRounds, err = r.agentSteps(c, trajs); err != nil {
				return nil, fmt.Errorf("cell %s: %w", c.Name, err)
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// agentSteps are the acting steps of a cell's agent from the runner's
// checkpoint, and the controller's rounds in an acting stage up to it (0,
// 0 when the runner has not checkpointed an acting step of the agent).
// The runner keeps an agent in <Checkpoints>/<namespace>/<name>-<UID>,
// beside which it may keep folders it set aside (unreadable or replaced
// checkpoints): only the one whose state names the MPA counts.
func (r *run) agentSteps(c Cell, trajs []trajectory.Trajectory) (steps, rounds int, err error) {
	st, n, found, err := r.checkpoint(c)
	if err != nil || n == 0 {
		return 0, 0, err
	}
	if n != 1 || st.Steps == 0 {
		if n > 1 {
			r.o.Log.Warn("testbedrun: the agent runner's checkpoints hold several agents of one MPA; its steps are not counted", "mpa", r.app(c), "folders", found)
		}
		return 0, 0, nil
	}
	for _, t := range trajs {
		for _, s := range t.Steps {
			if (s.Stage == string(v1alpha1.StageOnline) || s.Stage == string(v1alpha1.StageServing)) && !s.Time.After(st.Saved) {
				rounds++
			}
		}
	}
	return st.Steps, rounds, nil
}

// checkpoint is the agent runner's checkpointed state of the cell's agent
// and how many of its checkpoint folders name the MPA (found: every
// state.json of the cell's name); 0 when the testbed names no checkpoint
// folder or the runner has checkpointed no agent of the MPA.
func (r *run) checkpoint(c Cell) (st agents.State, n int, found []string, err error) {
	dir := r.b.Endpoints.Checkpoints
	if dir == "" {
		return st, 0, nil, nil
	}
	found, err = filepath.Glob(filepath.Join(dir, r.ns, c.Name+"-*", "state.json"))
	if err != nil {
		return st, 0, nil, err
	}
	for _, f := range found {
		s, err := agents.ReadState(filepath.Dir(f))
		if err == nil && s.MPA == r.ns+"/"+c.Name && filepath.Base(filepath.Dir(f)) == c.Name+"-"+s.UID {
			st, n = s, n+1
		}
	}
	return st, n, found, nil
}

// policyLoaded is an error when a cell with an initial policy has a
// complete episode and the agent runner still has no checkpoint of its
// agent: the runner checkpoints an agent as soon as it loads its initial
// policy, and one it cannot use leaves the MPA without an agent (HPA+VPA
// acts), whose figures must not pass for the agent's.
func (r *run) policyLoaded(c Cell) error {
	if c.Policy == nil || r.b.Endpoints.Checkpoints == "" {
		return nil
	}
	_, n, _, err := r.checkpoint(c)
	if err != nil || n > 0 {
		return err
	}
	return fmt.Errorf("cell %s: the agent runner has not started its agent from the initial policy %s after a whole episode (no checkpoint of it in %s): the runner withholds the recommendation of an MPA whose initial policy it cannot use, and HPA+VPA acts (its Warning Events, reason %s, say why)",
		c.Name, c.Name+"-"+r.id, filepath.Join(r.b.Endpoints.Checkpoints, r.ns), agents.ReasonInitialPolicyUnreadable)
}

// stageEvents are the controller's StageChanged Events per MPA, in time
// order (an Event whose message does not parse, such as one the recorder
// combined with similar ones, is logged and left out).
func (r *run) stageEvents(ctx context.Context) (map[string][]Transition, error) {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("reason", "StageChanged"),
		fields.OneTermEqualSelector("involvedObject.kind", "MultidimPodAutoscaler")).String()
	list, err := r.b.kube.CoreV1().Events(r.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("StageChanged events: %w", err)
	}
	evs := list.Items
	slices.SortStableFunc(evs, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	out := map[string][]Transition{}
	for _, e := range evs {
		t, err := ParseStageChanged(e.Message)
		if err != nil {
			r.o.Log.Warn("testbedrun: an Event left out", "mpa", e.InvolvedObject.Name, "err", err)
			continue
		}
		out[e.InvolvedObject.Name] = append(out[e.InvolvedObject.Name], t)
	}
	return out, nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.LastTimestamp.Time
}

// heldSteps reads, per MPA of the run and cause ("first", "applied",
// "stale"; controller/autoscaler's Hold* constants), the
// controller's count of steps held for want of a fresh recommendation
// from its /metrics.
func (r *run) heldSteps(ctx context.Context) (map[[2]string]int, error) {
	body, err := get(ctx, r.b.Endpoints.Controller)
	if err != nil {
		return nil, fmt.Errorf("the controller's metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the controller's metrics (%s): %w", r.b.Endpoints.Controller, err)
	}
	out := map[[2]string]int{}
	f, ok := fams["aware_controller_stale_recommendation_steps_total"]
	if !ok {
		return out, nil // none held yet: the counter has no series
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == r.ns {
			out[[2]string{labels["name"], labels["cause"]}] += int(m.GetCounter().GetValue())
		}
	}
	return out, nil
}

func get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

func (r *run) cleanup() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		if err := r.stops[i](); err != nil && !errors.Is(err, context.Canceled) {
			r.o.Log.Warn("testbedrun: cleaning up", "namespace", r.ns, "err", err)
		}
	}
	if r.store != nil {
		_ = r.store.Close()
	}
	if r.spool != "" {
		_ = os.RemoveAll(r.spool)
	}
}
