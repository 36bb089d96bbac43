package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/gym/remote"
)

func newEnvCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Serve RL environments to agents in other languages",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEnvServeCmd())
	return cmd
}

func newEnvServeCmd() *cobra.Command {
	var (
		listen     remote.ListenConfig
		sim        generator.EnvConfig
		cluster    mpaenv.ClusterConfig
		onCluster  bool
		kubeconfig string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve simulated applications, or MPAs of a cluster, as gym environments over HTTP/JSON",
		Long: `Serves applications of the generated pool, each simulated by the calibrated simulator, as
environments named after them (app-0001, ...) over HTTP/JSON, for agents in other languages:

  GET  /v1/envs                  the environment names
  GET  /v1/envs/{name}/spaces    observation and action spaces (names, low, high, dims)
  POST /v1/envs/{name}/reset     {"seed": N}        -> {"obs", "info", "seed"}
  POST /v1/envs/{name}/step      {"action": [...]}  -> {"obs", "reward", "terminated", "truncated", "info"}
  GET  /healthz                  no token needed

Every other call needs "Authorization: Bearer <token>" with the token in --token-file
(e.g. head -c 32 /dev/urandom | base64 > token; chmod 600 token). --insecure serves without a
token, on a loopback address only. Load shapes come from the real traces in --traces, or the
shipped copies and the fitted Twitter model where a file is absent. The Python client is gym/remote/python/aware_env.py.

With --cluster it serves MultidimPodAutoscalers of the cluster of --kubeconfig instead, named
after them (the MPAs of --mpa, or every MPA of --namespace that names an external
recommender). Each is the paper's MPA wrapper: a step writes the action to the MPA's
status.recommendation, waits until the controller (` + "`aware controller`" + `, same --step) has
actuated it, then observes one whole step through --prometheus and computes the reward as the
controller does. The controller applies it only while the MPA's agent stage is Online or
Serving (spec.agent.bootstrap: false starts there). Seeds are ignored: a cluster cannot be
rewound. Its user needs get/list on MPAs, patch on their status, get on the targets' scale
subresource and list on pods (controller/deploy/env-rbac/role.yaml).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if fl.Changed("apps") && len(sim.Names) > 0 {
				return errors.New("--apps and --app are exclusive: serve the first N applications, or the named ones")
			}
			envs := func(context.Context) (map[string]gym.Env, error) { return generator.SimEnvs(sim) }
			if onCluster {
				for _, n := range []string{"apps", "app", "pool-seed", "traces", "seed"} {
					if fl.Changed(n) {
						return fmt.Errorf("--%s selects simulated applications; with --cluster, select MPAs with --namespace and --mpa", n)
					}
				}
				cluster.Step, cluster.Episode = 15*time.Second, 0
				if fl.Changed("step") {
					cluster.Step = sim.Step
				}
				if fl.Changed("episode") {
					cluster.Episode = sim.Episode
				}
				envs = func(ctx context.Context) (map[string]gym.Env, error) {
					return mpaenv.ClusterEnvs(ctx, cluster, func() (*rest.Config, error) { return loadRESTConfig(kubeconfig) }, slog.Default())
				}
			} else {
				for _, n := range []string{"kubeconfig", "prometheus", "namespace", "mpa", "actuation-timeout", "pickup-timeout"} {
					if fl.Changed(n) {
						return fmt.Errorf("--%s needs --cluster", n)
					}
				}
			}
			return remote.ListenAndServe(cmd.Context(), listen, envs, cmd.OutOrStdout(), slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen.Addr, "addr", "127.0.0.1:7777", "address to listen on")
	f.StringVar(&listen.TokenFile, "token-file", "", "file holding the bearer token clients must send")
	f.BoolVar(&listen.Insecure, "insecure", false, "serve without a token (loopback addresses only)")
	f.IntVar(&sim.Apps, "apps", 1, "serve the first N applications of the generated pool")
	f.StringSliceVar(&sim.Names, "app", nil, "serve these applications of the pool (app-0001, ...; repeatable)")
	f.Int64Var(&sim.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	tracesFlag(f, &sim.Traces)
	f.DurationVar(&sim.Step, "step", 30*time.Second, "simulation step")
	f.IntVar(&sim.Episode, "episode", 100, "steps per episode")
	f.Uint64Var(&sim.Seed, "seed", 1, "seed of the synthetic load shapes")
	f.DurationVar(&listen.Timeout, "timeout", 0, "bound on each reset or step (0: none)")
	f.BoolVar(&listen.Metrics, "metrics", false, "also serve Prometheus metrics at /metrics (without a token)")
	f.BoolVar(&onCluster, "cluster", false, "serve MPAs of a real cluster instead of simulated applications")
	f.StringVar(&kubeconfig, "kubeconfig", "", "with --cluster: kubeconfig (default $KUBECONFIG, then in-cluster)")
	f.StringVar(&cluster.Prometheus, "prometheus", "", "with --cluster: Prometheus base URL (required)")
	f.StringVar(&cluster.Namespace, "namespace", "default", "with --cluster: namespace of the MPAs")
	f.StringSliceVar(&cluster.MPAs, "mpa", nil, "with --cluster: serve these MPAs (default: every MPA of --namespace with an external recommender)")
	f.DurationVar(&cluster.Actuation, "actuation-timeout", 0, "with --cluster: bound on the wait for a step's action to be actuated once the controller took it (default 3 steps)")
	f.DurationVar(&cluster.Pickup, "pickup-timeout", 0, "with --cluster: bound on the wait for the controller to take a step's recommendation (status.appliedRecommendationTime; default 10 steps)")
	return cmd
}
