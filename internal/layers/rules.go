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
)

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
	{Prefix: "workloads", Imports: []string{"workloads", "gym", "infra", "internal"},
		Why: "the segments, workload server, traces and simulator never import the controller, the generator or the evaluation: the simulator is the controller's stand-in, not its user"},
	{Prefix: "controller", Imports: []string{"controller", "controller/api", "controller/rl", "gym", "internal"},
		Why: "the controller and the agent runner are what a platform deploys: they depend on neither the simulator, the generator, the studies nor the testbed"},
	{Prefix: "generator", Imports: []string{"generator", "workloads", "controller/api", "gym", "internal"},
		Why: "the application pool is built from the workloads and rendered as MPA objects; it uses neither the controller's logic nor the studies"},
	{Prefix: "testbed", Imports: []string{"testbed", "generator", "workloads", "controller", "controller/api", "controller/rl", "gym", "infra", "internal"},
		Why: "the testbed stands up the system (controller, workloads, generated apps, launchers); the studies run on it, it does not run them"},
	{Prefix: "evaluation", Imports: []string{"evaluation", "testbed", "generator", "workloads", "controller", "controller/api", "controller/rl", "gym", "infra", "internal"},
		Why: "the studies, baselines, benchmarks and fault suite use everything below them; nothing but the CLI and the examples use them"},
	{Prefix: "examples", Imports: []string{"examples", "evaluation", "testbed", "generator", "workloads", "controller", "controller/api", "controller/rl", "gym", "infra", "internal"},
		Why: "tests that extend the project from outside its packages"},
	{Prefix: "cmd", Imports: []string{"cmd", "examples", "evaluation", "testbed", "generator", "workloads", "controller", "controller/api", "controller/rl", "gym", "infra", "internal"},
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
