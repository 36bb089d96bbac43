package layers

import "strings"

// Module is the module path the rules are about.
const Module = "github.com/aware-autoscaler/aware"

// Room is a part of the module: the packages under Prefix (a path relative
// to the module root), unless a longer prefix names another room.
type Room struct {
	Prefix string
	// Imports are the rooms (by Prefix) its packages may import, itself
	// included when listed.
	Imports []string
	// Outside, when set, lists the only outside import paths (prefixes) its
	// packages may use besides the standard library; nil allows any.
	Outside []string
	// Why is the rule's reason, shown when it is broken.
	Why string
}

var (
	gonum      = []string{"gonum.org/v1/gonum/"}
	kubernetes = []string{"k8s.io/api/", "k8s.io/apimachinery/"}

	// numeric are the controller's numeric rooms: the RL library and what
	// is built on it, all gonum only.
	numeric = []string{"controller/rl", "controller/meta", "controller/bootstrap", "controller/forecast", "controller/transfer"}
	// controlPlane is the MPA controller's rooms: what runs rule-based
	// recommenders, without RL.
	controlPlane = []string{"controller", "controller/api", "controller/recommender", "controller/shard"}
	// system is everything below the testbed and the evaluation.
	system = join(controlPlane, numeric, []string{"controller/agents", "generator", "workloads", "gym", "infra", "internal"})
	// studyBase is what a study stands on: the framework, its world, the
	// evaluation room (training loops, baselines, plots, progress), the
	// testbed and the system.
	studyBase = join([]string{"evaluation/study", "evaluation/study/lab", "evaluation", "evaluation/testbedrun", "testbed"}, system)
)

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// study is the room of one study: its package, on studyBase; it imports
// no other study.
func study(name string) Room {
	return Room{Prefix: "evaluation/study/" + name, Imports: append([]string{"evaluation/study/" + name}, studyBase...),
		Why: "a study stands on the study framework, the lab, the training loops and the system, never on another study (the suite puts them together)"}
}

// Rooms are the module's rooms, lowest first (docs/architecture.md).
var Rooms = []Room{
	{Prefix: "internal", Imports: []string{"internal"}, Outside: gonum,
		Why: "leaf primitives (atomic file writes, quantiles) every room may use; they use nothing of the project"},
	{Prefix: "infra", Imports: []string{"infra", "internal"},
		Why: "launchers of local processes (control plane, Prometheus, InfluxDB, builds) that workloads and tests stand on; they know nothing of what runs on them"},
	{Prefix: "gym", Imports: []string{"gym", "internal"},
		Why: "the environment interface, the AWARE state and reward: shared by simulator, controller and agents, so it depends on none of them"},
	{Prefix: "controller/api", Imports: []string{"controller/api"}, Outside: kubernetes,
		Why: "the MPA API types import only the Kubernetes API types and apimachinery, so any client can use them"},
	{Prefix: "controller/rl", Imports: []string{"controller/rl", "internal"}, Outside: gonum,
		Why: "the RL library imports gonum only: it runs anywhere, in the controller and in the studies"},
	{Prefix: "controller/forecast", Imports: []string{"controller/forecast", "internal"}, Outside: gonum,
		Why: "the load forecaster is numeric code: gonum only"},
	{Prefix: "controller/meta", Imports: []string{"controller/meta", "controller/rl", "internal"}, Outside: gonum,
		Why: "the meta learner is numeric code on the RL library: gonum only, no environment, no cluster"},
	{Prefix: "controller/bootstrap", Imports: []string{"controller/bootstrap", "controller/rl", "internal"}, Outside: gonum,
		Why: "BCQ and offline training are numeric code on the RL library: gonum only, and no simulator (the fitted simulator of PPO's route is workloads/sim.Fit)"},
	{Prefix: "controller/transfer", Imports: []string{"controller/transfer", "controller/forecast", "controller/rl", "gym", "internal"}, Outside: gonum,
		Why: "TL and TL+ are numeric code on the RL library and the forecaster: gonum only"},
	{Prefix: "controller/recommender", Imports: []string{"controller/recommender", "internal"}, Outside: gonum,
		Why: "the rule-based recommenders are pure decision maths: no Kubernetes client, no I/O"},
	{Prefix: "controller/shard", Imports: []string{"controller/shard", "internal"},
		Why: "sharing MPAs among replicas knows Leases and hashing, nothing of what an MPA does"},
	{Prefix: "workloads", Imports: []string{"workloads", "gym", "infra", "internal"},
		Why: "the segments, workload server, traces and simulator never import the controller, the generator or the evaluation: the simulator is the controller's stand-in, not its user"},
	{Prefix: "controller", Imports: join(controlPlane, []string{"gym", "internal"}),
		Why: "the MPA controller (autoscaler, target, manager, admission, telemetry, trajectory, mpaenv, deploy) runs rule-based recommenders and knows no RL, simulator, generator, study or testbed: the agent runner brings the agents"},
	{Prefix: "controller/agents", Imports: join(controlPlane, numeric, []string{"controller/agents", "gym", "internal"}),
		Why: "the agent runner sits on the controller and the RL side; it carries no simulator, generator, study or testbed"},
	{Prefix: "generator", Imports: []string{"generator", "workloads", "controller/api", "gym", "internal"},
		Why: "the application pool is built from the workloads and rendered as MPA objects; it uses neither the controller's logic nor the studies"},
	{Prefix: "testbed", Imports: join([]string{"testbed"}, system),
		Why: "the testbed stands up the system (controller, workloads, generated apps, launchers); the studies run on it, it does not run them"},
	{Prefix: "evaluation", Imports: join([]string{"evaluation", "evaluation/study", "evaluation/study/lab", "testbed"}, system),
		Why: "the baselines, training loops, meta-learning runs, validation, benchmarks and fault suite use the system below them, the study framework and its lab; no study and no suite"},
	{Prefix: "evaluation/testbedrun", Imports: join([]string{"evaluation/testbedrun", "evaluation", "testbed"}, system),
		Why: "a study's cells as MPAs on a running testbed: it uses the testbed's endpoints, the system and the training loops' episode figures, and knows no study, no lab and no study framework"},
	{Prefix: "evaluation/study", Imports: []string{"evaluation/study", "internal"},
		Why: "the study framework (cells, store, shards, statistics, reports) knows no study, no lab and no system: a new study gets a room of its own beside adaptation's"},
	{Prefix: "evaluation/study/lab", Imports: append([]string{"evaluation/study/lab"}, studyBase...),
		Why: "the world the studies run in (pool, traces, tuned rule-based autoscaler, shared policies) knows no study"},
	study("characterisation"),
	study("adaptation"),
	study("serving"),
	study("bootstrapping"),
	study("alpha"),
	{Prefix: "evaluation/study/suite", Imports: join([]string{"evaluation/study/suite", "evaluation/study", "evaluation/study/lab",
		"evaluation/study/characterisation", "evaluation/study/adaptation", "evaluation/study/serving", "evaluation/study/bootstrapping", "evaluation/study/alpha",
		"evaluation/testbedrun"}, system),
		Why: "the registry puts the studies together and attaches them to a testbed (evaluation/testbedrun); only the CLI uses it"},
	{Prefix: "examples", Imports: join([]string{"examples", "evaluation", "evaluation/study", "evaluation/study/lab", "evaluation/study/suite", "evaluation/testbedrun", "testbed"}, system),
		Why: "tests that extend the project from outside its packages"},
	{Prefix: "cmd", Imports: join([]string{"cmd", "evaluation", "evaluation/study", "evaluation/study/lab", "evaluation/study/suite",
		"evaluation/study/characterisation", "evaluation/study/adaptation", "evaluation/study/serving", "evaluation/study/bootstrapping", "evaluation/study/alpha",
		"evaluation/testbedrun", "testbed"}, system),
		Why: "the binaries: flags, then a call into a package"},
}

// RoomOf is the room of pkg (a module-relative path): the one with the
// longest prefix naming pkg or a folder above it; false when none does.
func RoomOf(pkg string) (Room, bool) {
	var best Room
	found := false
	for _, r := range Rooms {
		if (pkg == r.Prefix || strings.HasPrefix(pkg, r.Prefix+"/")) && len(r.Prefix) > len(best.Prefix) {
			best, found = r, true
		}
	}
	return best, found
}

// Allowed says whether a package of room from may import the module
// package to (module-relative).
func Allowed(from Room, to string) bool {
	r, ok := RoomOf(to)
	if !ok {
		return false
	}
	for _, p := range from.Imports {
		if p == r.Prefix {
			return true
		}
	}
	return false
}

// OutsideAllowed says whether a package of room from may import the
// outside path imp (not the module's, not the standard library's).
func OutsideAllowed(from Room, imp string) bool {
	if from.Outside == nil {
		return true
	}
	for _, p := range from.Outside {
		if strings.HasPrefix(imp, p) {
			return true
		}
	}
	return false
}
