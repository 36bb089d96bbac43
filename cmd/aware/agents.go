package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/transfer"
	"github.com/aware-autoscaler/aware/evaluation/metalearn"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/objstore"
)

type agentsFlags struct {
	kubeconfig string
	cfg        agents.Config
	name       string
	step       time.Duration
	trainers   int
	updates    int
	offline    int
	replay     int
	seed       uint64
	qps        float32
	burst      int
	meta       string
	metaM      int
	mapping    gym.Mapping
	mappingSet bool // --actions given
	s3         objstore.Config
	s3Prefix   string
	s3Every    time.Duration
	ckptEvery  time.Duration
	timeScale  float64
	memLimit   string
	policies   string
}

func newAgentsCmd() *cobra.Command {
	var fl agentsFlags
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Run the AWARE recommender: one RL agent per MPA that names it in spec.recommenders",
		Long: `Runs the agent runner against the cluster of --kubeconfig (or in-cluster config), beside the
controller: every MPA whose spec.recommenders names --name (default aware) gets an agent
(BCQ when the MPA bootstraps, else DDPG) that acts as its external recommender through
status.recommendation, in the stage the controller keeps in status.agent: OFFLINE trains it
from the controller's trajectory records of HPA+VPA alone; ONLINE explores and trains;
SERVING acts with the frozen policy. Agents are checkpointed (weights and optimiser state)
in --dir/checkpoints after every episode and stage change, an OFFLINE agent at most every
--offline-checkpoint-every (a restarted runner trains again on the records since), and
resume from there after a restart; with an object store (--s3-endpoint or AWARE_S3_ENDPOINT, the S3-compatible store
the project launches for the segments) each checkpoint is also copied to the bucket under
--s3-prefix (an OFFLINE agent's at most every --s3-upload-every), and an agent whose local
checkpoint is missing or older resumes from the bucket, so a runner that lost its disk
(a rescheduled pod) resumes every agent's stage, episode and weights. An MPA annotated
agents.aware.dev/initial-policy: NAME whose agent has no checkpoint yet starts from the policy
in --policies/NAME (agent.ckpt and policy.json, agents.WritePolicy) instead of a fresh agent; a
policy that cannot be used withholds its recommendation (HPA+VPA acts) until it can. Training runs in --trainers slots, off the acting path. The records are read from
the controller's InfluxDB store (--influx-url): the embedded store belongs to the controller
process. Its own metrics are on --metrics-addr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl.mappingSet = cmd.Flags().Changed("actions")
			fl.s3 = s3Config(cmd, fl.s3)
			return runAgents(cmd.Context(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG, then in-cluster)")
	f.StringVar(&fl.cfg.Namespace, "namespace", "", "serve one namespace only (default all)")
	f.StringVar(&fl.name, "name", agents.DefaultName, "recommender name the runner serves")
	f.DurationVar(&fl.step, "step", 15*time.Second, "the controller's step interval (its --step)")
	f.IntVar(&fl.trainers, "trainers", 1, "agents training at once (its CPU share in cores)")
	f.IntVar(&fl.updates, "updates", 1, "training updates per acting step in ONLINE")
	f.IntVar(&fl.offline, "offline-updates", 2, "training updates per recorded transition in OFFLINE (those a replay smaller than a minibatch cannot run are made up once it can)")
	f.DurationVar(&fl.ckptEvery, "offline-checkpoint-every", agents.DefaultOfflineCheckpoints, "shortest simulated time between checkpoints of an OFFLINE agent (0: after every round that updated it), divided by --time-scale on the wall clock; after a restart it trains again on the records since")
	f.Float64Var(&fl.timeScale, "time-scale", 1, "simulated seconds per wall second (the controller's --time-scale): on a digital twin (the local testbed) --offline-checkpoint-every and --s3-upload-every are simulated time, divided by it; 1 on a real cluster")
	f.IntVar(&fl.replay, "replay", agents.DefaultReplay, "replay memory of each agent, in transitions (the newest overwrite the oldest; 192 B each, 1.2 KiB with --meta's embedding)")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of every agent's weights and noise (with its MPA's UID)")
	f.StringVar(&fl.cfg.PrometheusURL, "prometheus", "", "Prometheus base URL (required)")
	f.StringVar(&fl.cfg.SnapshotsFrom, "snapshots-from", "", "the controller's metrics address, e.g. http://aware-controller:8080: observe from the Prometheus snapshots it takes each round (its --serve-snapshots) instead of querying Prometheus again; --prometheus is used when it does not answer")
	f.StringVar(&fl.cfg.InfluxURL, "influx-url", "", "the controller's InfluxDB 1.x trajectory store (required)")
	f.StringVar(&fl.cfg.InfluxDB, "influx-db", "aware", "InfluxDB database")
	f.StringVar(&fl.cfg.Dir, "dir", "out/agents", "checkpoints (DIR/checkpoints) and the store's spool")
	f.StringVar(&fl.cfg.MetricsAddr, "metrics-addr", ":8082", `address of /metrics ("0" disables)`)
	f.StringVar(&fl.cfg.ProbeAddr, "probe-addr", ":8083", `address of /healthz and /readyz ("0" disables)`)
	f.BoolVar(&fl.cfg.Profiling, "pprof", false, "serve Go's profiles under /debug/pprof/ on --metrics-addr")
	f.StringVar(&fl.meta, "meta", "", "folder of an `aware meta train` run: its frozen meta learner embeds each MPA's episodes into the agents' states, and agents of MPAs that do not bootstrap start from its meta-trained DDPG")
	f.StringVar(&fl.policies, "policies", "", "folder of initial policies: an MPA annotated agents.aware.dev/initial-policy: NAME whose agent has no checkpoint starts from DIR/NAME (agent.ckpt and policy.json); unusable or unset, its recommendation is withheld (InitialPolicyUnreadable) and HPA+VPA acts")
	f.IntVar(&fl.metaM, "meta-m", 20, "trajectories per bundle the meta run was trained with")
	actionsFlag(f, &fl.mapping)
	s3Flags(f, &fl.s3)
	f.StringVar(&fl.s3Prefix, "s3-prefix", "agents", "key prefix of the checkpoint copies in the bucket")
	f.DurationVar(&fl.s3Every, "s3-upload-every", 5*time.Minute, "shortest simulated time between copies of an OFFLINE agent's checkpoint, divided by --time-scale on the wall clock (stage changes and episode ends are always copied)")
	f.StringVar(&fl.memLimit, "memory-limit", "", "soft memory limit of the Go runtime, e.g. 640Mi (default $GOMEMLIMIT or none): set it below the container's limit; the garbage collector then keeps the heap near the agents' live memory instead of twice it")
	f.Float32Var(&fl.qps, "kube-api-qps", 100, "client QPS to the API server")
	f.IntVar(&fl.burst, "kube-api-burst", 200, "client burst to the API server")
	return cmd
}

func runAgents(ctx context.Context, fl agentsFlags) error {
	var errs []error
	if fl.trainers < 1 {
		errs = append(errs, fmt.Errorf("--trainers %d: must be positive", fl.trainers))
	}
	if fl.updates < 0 || fl.offline < 0 {
		errs = append(errs, fmt.Errorf("--updates %d, --offline-updates %d: must not be negative", fl.updates, fl.offline))
	}
	if fl.ckptEvery < 0 {
		errs = append(errs, fmt.Errorf("--offline-checkpoint-every %v: must not be negative", fl.ckptEvery))
	}
	if k := fl.timeScale; !(k >= 1) || math.IsInf(k, 0) {
		errs = append(errs, fmt.Errorf("--time-scale %g: want a finite number of simulated seconds per wall second, at least 1", k))
	}
	if fl.replay < 1 {
		errs = append(errs, fmt.Errorf("--replay %d: must be positive", fl.replay))
	}
	if fl.cfg.SnapshotsFrom != "" {
		if err := manager.CheckSnapshotsURL(fl.cfg.SnapshotsFrom); err != nil {
			errs = append(errs, fmt.Errorf("--snapshots-from %w", err))
		}
	}
	if fl.memLimit != "" {
		q, err := resource.ParseQuantity(fl.memLimit)
		if err != nil || q.Value() <= 0 {
			errs = append(errs, fmt.Errorf("--memory-limit %q: want a positive quantity such as 640Mi", fl.memLimit))
		} else {
			debug.SetMemoryLimit(q.Value())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rc, err := loadRESTConfig(fl.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = fl.qps, fl.burst
	fl.cfg.REST = rc
	fl.cfg.Log = slog.Default()
	fl.cfg.Options = []agents.Option{agents.WithName(fl.name), agents.WithStep(fl.step), agents.WithTrainers(fl.trainers),
		agents.WithUpdates(fl.updates, fl.offline), agents.WithSeed(fl.seed), agents.WithFactory(agents.NewFactory(fl.replay)), agents.WithOfflineCheckpoints(fl.ckptEvery), agents.WithTimeScale(fl.timeScale)}
	if fl.meta != "" {
		opts, mapping, err := metaAgents(fl.meta, fl.metaM, fl.seed, fl.replay, fl.cfg.Dir)
		if err != nil {
			return err
		}
		if fl.mappingSet && mapping != fl.mapping {
			return fmt.Errorf("--actions %s: the agents of --meta %s act through %s actions", fl.mapping, fl.meta, mapping)
		}
		fl.mapping = mapping
		fl.cfg.Options = append(fl.cfg.Options, opts...)
	}
	fl.cfg.Options = append(fl.cfg.Options, agents.WithActions(fl.mapping), agents.WithPolicies(fl.policies))
	if fl.s3.Endpoint != "" {
		if err := fl.s3.Validate(); err != nil {
			return fmt.Errorf("checkpoint object store: %w", err)
		}
		objs, err := objstore.Connect(ctx, fl.s3)
		if err != nil {
			return fmt.Errorf("checkpoint object store: %w", err)
		}
		fl.cfg.Options = append(fl.cfg.Options, agents.WithObjects(objs, fl.s3Prefix, fl.s3Every))
		slog.Info("agents: checkpoints are copied to the object store", "endpoint", fl.s3.Endpoint, "bucket", objs.Bucket(), "prefix", fl.s3Prefix)
	}
	return agents.Run(ctx, fl.cfg)
}

// metaAgents are the runner's options for the meta-training run in dir:
// its frozen meta learner, and a factory whose agents for MPAs that do not
// bootstrap are copies of the meta-trained DDPG (AWARE adapts that agent to
// a new application; BCQ learns from the records on the wider state), and
// the mapping its agent acted through.
func metaAgents(dir string, m int, seed uint64, replay int, tmp string) ([]agents.Option, gym.Mapping, error) {
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	trained, f, err := lab.NewMetaLearners(cfg, m, seed, metalearn.PaperMetaLR)
	if err != nil {
		return nil, 0, err
	}
	_, mapping, err := train.LoadMetaTrain(dir, trained, f)
	if err != nil {
		return nil, 0, fmt.Errorf("--meta %s: %w", dir, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, 0, err
	}
	var mu sync.Mutex // the trained agent is copied by many agents' goroutines
	factory := func(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error) {
		if boot {
			return agents.NewFactory(replay)(stateDim, actionDim, true, seed)
		}
		ag, err := ddpg.New(stateDim, actionDim, rand.New(rand.NewPCG(seed, 0xA6E75)),
			ddpg.WithEmbedding(cfg.Embed, ddpg.CriticLoss), ddpg.WithGaussianNoise(lab.DefaultNoise), ddpg.WithReplay(replay, ddpg.DefaultConfig().BatchSize))
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		return ag, transfer.Copy(ag, trained, tmp)
	}
	return []agents.Option{agents.WithMeta(f), agents.WithFactory(factory)}, mapping, nil
}
