package scale

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/infra/cluster"
)

// Namespace holds the benchmark's applications and MPAs.
const Namespace = "bench"

// Targets are the bounds for one controller replica.
type Targets struct {
	// CPU is the average CPU in cores over the measured rounds.
	CPU float64
	// RSS bounds the resident set size in bytes (sampled maximum and
	// VmHWM).
	RSS uint64
	// Round bounds the time from a round's boundary to every MPA's new
	// recommendation.
	Round time.Duration
	// AgentsRSS bounds the controller's and the agent runner's resident
	// sets together, with Config.Agents; AgentsActing bounds the runner's
	// CPU besides training (acting: observing, inference, writing
	// recommendations), in cores averaged over a round.
	AgentsRSS    uint64
	AgentsActing float64
}

// DefaultTargets are the issue's: ≤ 1 core, ≤ 512 MiB, a round ≤ 15 s;
// with agents ≤ 1 GiB and their inference ≤ 0.5 core.
func DefaultTargets() Targets {
	return Targets{CPU: 1, RSS: 512 << 20, Round: 15 * time.Second, AgentsRSS: 1 << 30, AgentsActing: 0.5}
}

// Config describes one benchmark run. Zero fields take the defaults noted.
type Config struct {
	// Apps is the number of generated applications, each with its MPA on
	// the built-in recommender (default 1000).
	Apps int
	// Nodes is the number of kwok nodes, alternately x86 and Power
	// of 256 CPUs and 1 TiB (default: for each node class, enough nodes of
	// its architecture for twice its initial pods and eight times their
	// initial requests; at least 4).
	Nodes int
	// Step is the controller's step (default 15 s).
	Step time.Duration
	// Rounds is the number of measured rounds after the warm-up
	// (default 4).
	Rounds int
	// Scrape is Prometheus's scrape interval (default 5 s).
	Scrape time.Duration
	// Tick is the twin's wall-clock tick (default 1 s).
	Tick time.Duration
	// PoolSeed seeds the generated pool (default 1); Seed the load shapes
	// and the twin's noise (default 1).
	PoolSeed int64
	Seed     uint64
	// Traces is the folder of the real traces; a missing file gives its
	// shipped copy or fitted model, "" synthetic shapes
	// (generator.LoadShapes).
	Traces string
	// Dir is the working directory (cluster, prometheus, store, logs); it
	// must be empty or absent. Required.
	Dir string
	// Binaries are the control plane's executables (cluster.Cached).
	// Required.
	Binaries cluster.Binaries
	// Controller is the argv prefix that runs `aware controller` itself
	// (not a wrapper such as `go run`: its pid is the one measured), e.g.
	// {os.Executable(), "controller"}; Run appends --kubeconfig,
	// --prometheus, --store-dir, --step, --metrics-addr and --probe-addr.
	// Required.
	Controller []string
	// Agents, when set, is the argv prefix that runs `aware agents` itself
	// (e.g. {os.Executable(), "agents"}): the MPAs then name the AWARE
	// recommender with bootstrapping agents (OFFLINE for AgentWindow
	// episodes of AgentEpisode steps while HPA+VPA acts and the runner
	// trains BCQ on its records, then ONLINE, never SERVING: acting and
	// training throughout), the controller keeps trajectories in a local
	// InfluxDB, and the runner hosts one agent per MPA with its
	// ClusterRole's rights. Run appends --kubeconfig, --prometheus,
	// --influx-url, --dir, --step, --metrics-addr and --probe-addr.
	Agents []string
	// AgentEpisode is the MPAs' episode length in steps with Agents
	// (default 16) and AgentWindow the episodes they stay OFFLINE
	// (default 4): by default 64 records, BCQ's batch, before an agent
	// acts. A fresh agent's first actions are the middle of the action
	// box (about 10 replicas of 1.1 cores and 1.5 GiB): at 1000 MPAs
	// that is more pods than the pool schedules.
	AgentEpisode, AgentWindow int
	// Targets are the bounds checked (default DefaultTargets).
	Targets Targets
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

// withDefaults fills the zero fields and validates the result.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Apps, 1000)
	def(&c.Rounds, 4)
	defDur(&c.Step, 15*time.Second)
	defDur(&c.Scrape, 5*time.Second)
	defDur(&c.Tick, time.Second)
	if c.PoolSeed == 0 {
		c.PoolSeed = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Targets == (Targets{}) {
		c.Targets = DefaultTargets()
	}
	if len(c.Agents) > 0 {
		def(&c.AgentEpisode, 16)
		def(&c.AgentWindow, 4)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if c.Apps < 1 {
		errs = append(errs, fmt.Errorf("scale: Apps %d: must be positive", c.Apps))
	}
	if n := len(cluster.DefaultArchs()); c.Nodes < 0 || (c.Nodes > 0 && c.Nodes < n) {
		errs = append(errs, fmt.Errorf("scale: Nodes %d: want at least %d, one per node architecture %v (0: sized for the pool)", c.Nodes, n, cluster.DefaultArchs()))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("scale: Rounds %d: must be positive", c.Rounds))
	}
	if c.Step < time.Second {
		errs = append(errs, fmt.Errorf("scale: Step %s: must be at least 1s (the controller's minimum)", c.Step))
	}
	if c.Scrape <= 0 || c.Scrape > c.Step {
		errs = append(errs, fmt.Errorf("scale: Scrape %s: must be positive and at most Step %s (rates over one step need samples)", c.Scrape, c.Step))
	}
	if c.Tick <= 0 {
		errs = append(errs, fmt.Errorf("scale: Tick %s: must be positive", c.Tick))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("scale: Dir: a working directory is required"))
	}
	if c.Binaries == (cluster.Binaries{}) {
		errs = append(errs, errors.New("scale: Binaries: the control plane's executables are required (cluster.Cached)"))
	}
	if len(c.Controller) == 0 || c.Controller[0] == "" {
		errs = append(errs, errors.New("scale: Controller: the argv that runs `aware controller` is required"))
	}
	if len(c.Agents) > 0 && c.Agents[0] == "" {
		errs = append(errs, errors.New("scale: Agents: the argv that runs `aware agents` has no program"))
	}
	if c.AgentEpisode < 0 || (len(c.Agents) > 0 && c.AgentEpisode < 2) {
		errs = append(errs, fmt.Errorf("scale: AgentEpisode %d: an episode of at least 2 steps is required with Agents", c.AgentEpisode))
	}
	if c.AgentWindow < 0 || c.AgentWindow > 1000 {
		errs = append(errs, fmt.Errorf("scale: AgentWindow %d: must be in [1, 1000] with Agents (0: the default)", c.AgentWindow))
	}
	if c.Targets.CPU <= 0 || c.Targets.RSS == 0 || c.Targets.Round <= 0 || (len(c.Agents) > 0 && (c.Targets.AgentsRSS == 0 || c.Targets.AgentsActing <= 0)) {
		errs = append(errs, fmt.Errorf("scale: Targets %+v: every bound must be positive", c.Targets))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	return c, nil
}

// Capacity of one kwok node (infra/cluster): pods, CPUs and memory.
const (
	nodePods   = 1100
	nodeCPU    = 256
	nodeMemory = 1 << 40
	// podHeadroom and resourceHeadroom are how many times the pool's
	// initial pods and initial requests the nodes hold. The bench measures
	// the controller, not the cluster's capacity: a pod left Pending has
	// no metrics, which holds its MPA's step, and a cluster full of
	// Unschedulable pods costs the scheduler and kube-controller-manager a
	// share of the 2 cores. Agents exploring at 1000 MPAs asked for 3.8
	// times the initial CPU (4380 of 1147 cores) while the nodes held
	// twice it, which left 1657 pods Pending; kwok nodes cost nothing but
	// their heartbeats, so each holds four times what it used to.
	podHeadroom      = 2
	resourceHeadroom = 8
)

// nodesNeeded is how many kwok nodes hold podHeadroom times pods pods and
// resourceHeadroom times their initial requests of cpu cores and memory
// bytes.
func nodesNeeded(pods int, cpu, memory float64) int {
	return int(math.Ceil(max(float64(pods)*podHeadroom/nodePods, max(cpu/nodeCPU, memory/nodeMemory)*resourceHeadroom)))
}
