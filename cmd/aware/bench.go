package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/scale"
	"github.com/aware-autoscaler/aware/evaluation/speed"
	"github.com/aware-autoscaler/aware/infra/cluster"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Print benchmark tables",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rl",
		Short: "Time the RL library against the issue's targets and FIRM's published figures",
		Long: `Runs testing.Benchmark on DDPG's update (minibatch 64) and inference with FIRM's 40-40
networks, PPO's update, and the 2×256 bidirectional GRU over 20 trajectories × 100 steps, and
prints each time with its target and its speed-up over FIRM's published 73 ms and 1.2 ms.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return speed.Bench(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	})
	cmd.AddCommand(newBenchControllerCmd())
	return cmd
}

// benchControllerFlags are the flags of `aware bench controller`.
type benchControllerFlags struct {
	cfg       scale.Config
	ctlArgs   []string
	agents    bool
	agentArgs []string
	keep      bool
	check     bool
}

func newBenchControllerCmd() *cobra.Command {
	var fl benchControllerFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Scale benchmark: one controller replica over --apps MPAs on the local control plane with the digital twin",
		Long: `Starts the local control plane (kwok nodes), installs the MPA CRD and the controller's
ClusterRole built into this binary, deploys the first --apps generated applications with
their MPAs (built-in HPA+VPA recommender) and waits for their pods, runs the digital twin scraped
by a real Prometheus every --scrape, and starts this binary's ` + "`aware controller`" + ` as its
own process with only its ClusterRole's rights (webhook off; --controller-args adds flags).
After a warm-up in which every MPA gets a recommendation on fresh metrics it measures --rounds
step-aligned rounds as the controller reports them (aware_controller_last_round: the time from
each round's boundary until its last MPA step finished, its steps and how many of them wrote
status), the controller's average CPU (/proc/<pid>/stat), its RSS sampled every
second and its peak (VmHWM), and its error counters, against the issue's targets: ≤ 1 core,
≤ 512 MiB, a full round ≤ 15 s. It also prints the whole machine's CPU by process, since the
testbed shares the machine with the controller. At 1000 apps it takes about 4 minutes and all of
2 cores: run nothing heavy beside it. With --keep the working directory keeps the logs,
and controller-metrics.txt (its /metrics at the end).
With --check a missed target is an error (for nightly runs); the table is printed either way.

With --agents the MPAs name the AWARE recommender instead, with bootstrapping agents: OFFLINE
for --agent-window episodes of --agent-episode steps (HPA+VPA acts, the runner trains BCQ on
its records), then ONLINE for good (acting and training; never SERVING); the controller keeps trajectories in a local InfluxDB (Debian's
influxd) and this binary's ` + "`aware agents`" + ` runs as its own process with its ClusterRole's
rights, observing from the Prometheus snapshots the controller serves (--snapshots-from)
(--agents-args adds flags, e.g. --agents-args=--trainers=2). The warm-up then lasts until
every MPA has a recommendation from its agent on fresh metrics, and the table adds the runner's
CPU (acting besides training: ≤ 0.5 core), the controller's and the runner's memory together
(≤ 1 GiB), its steps, updates per second and withheld recommendations.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errOut := cmd.ErrOrStderr()
			return onLocalPlane(cmd.Context(), "aware bench controller", fl.cfg.Dir, fl.keep, errOut, func(bins cluster.Binaries, self, dir string) error {
				cfg := fl.cfg
				cfg.Binaries, cfg.Controller, cfg.Log, cfg.Dir = bins, append([]string{self, "controller"}, fl.ctlArgs...), slog.Default(), dir
				if fl.agents {
					cfg.Agents = append([]string{self, "agents"}, fl.agentArgs...)
				} else {
					cfg.AgentEpisode, cfg.AgentWindow = 0, 0
				}
				return scale.Bench(cmd.Context(), cfg, fl.check, cmd.OutOrStdout(), errOut)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.cfg.Apps, "apps", 1000, "generated applications, one MPA each (the first N of the pool)")
	f.IntVar(&fl.cfg.Nodes, "nodes", 0, "kwok nodes of 256 CPUs, 1 TiB and 1100 pods (default: room for twice the pool's initial pods and eight times its initial requests, at least 4)")
	f.DurationVar(&fl.cfg.Step, "step", 15*time.Second, "the controller's step")
	f.IntVar(&fl.cfg.Rounds, "rounds", 4, "rounds measured after the warm-up")
	f.DurationVar(&fl.cfg.Scrape, "scrape", 5*time.Second, "Prometheus's scrape interval")
	f.DurationVar(&fl.cfg.Tick, "tick", time.Second, "the twin's wall-clock tick")
	f.Int64Var(&fl.cfg.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Uint64Var(&fl.cfg.Seed, "seed", 1, "seed of the synthetic load shapes and the twin's noise")
	tracesFlag(f, &fl.cfg.Traces)
	f.StringVar(&fl.cfg.Dir, "dir", "", "working directory, empty or absent (default: a temporary one, removed afterwards unless --keep)")
	f.StringSliceVar(&fl.ctlArgs, "controller-args", nil, "extra flags of the aware controller command, e.g. --controller-args=--concurrency=16,-v")
	f.BoolVar(&fl.agents, "agents", false, "MPAs driven by AWARE agents (aware agents) instead of the built-in HPA+VPA")
	f.IntVar(&fl.cfg.AgentEpisode, "agent-episode", 16, "with --agents: the MPAs' episode length in steps")
	f.IntVar(&fl.cfg.AgentWindow, "agent-window", 4, "with --agents: episodes an agent stays OFFLINE before it acts")
	f.StringSliceVar(&fl.agentArgs, "agents-args", nil, "with --agents: extra flags of the aware agents command")
	f.BoolVar(&fl.keep, "keep", false, "keep the temporary working directory (logs, Prometheus data, trajectories)")
	f.BoolVar(&fl.check, "check", false, "fail when a target is missed")
	return cmd
}
