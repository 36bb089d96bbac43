package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/gym/remote"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
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

// envServeConfig is one `aware env serve`.
type envServeConfig struct {
	addr      string
	tokenFile string
	insecure  bool
	apps      int      // the first apps of the pool, unless names is set
	names     []string // applications of the pool by name
	poolSeed  int64
	traces    string
	step      time.Duration
	episode   int
	seed      uint64 // of the synthetic load shapes
	timeout   time.Duration
	metrics   bool
	// cluster serves MPAs of a real cluster instead of simulated apps.
	cluster    bool
	kubeconfig string
	prometheus string
	namespace  string
	mpas       []string
	actuation  time.Duration
	pickup     time.Duration
	// listening, if set, is told the address once the server listens.
	listening func(addr string)
}

func newEnvServeCmd() *cobra.Command {
	var cfg envServeConfig
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
token, on a loopback address only. Load shapes come from the real traces in --traces, or
synthetic ones when they are absent. The Python client is gym/remote/python/aware_env.py.

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
			if fl.Changed("apps") && len(cfg.names) > 0 {
				return errors.New("--apps and --app are exclusive: serve the first N applications, or the named ones")
			}
			if cfg.cluster {
				for _, n := range []string{"apps", "app", "pool-seed", "traces", "seed"} {
					if fl.Changed(n) {
						return fmt.Errorf("--%s selects simulated applications; with --cluster, select MPAs with --namespace and --mpa", n)
					}
				}
				if !fl.Changed("step") {
					cfg.step = 15 * time.Second
				}
				if !fl.Changed("episode") {
					cfg.episode = 0
				}
			} else {
				for _, n := range []string{"kubeconfig", "prometheus", "namespace", "mpa", "actuation-timeout", "pickup-timeout"} {
					if fl.Changed(n) {
						return fmt.Errorf("--%s needs --cluster", n)
					}
				}
			}
			return cfg.run(cmd.Context(), cmd.OutOrStdout(), slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "address to listen on")
	f.StringVar(&cfg.tokenFile, "token-file", "", "file holding the bearer token clients must send")
	f.BoolVar(&cfg.insecure, "insecure", false, "serve without a token (loopback addresses only)")
	f.IntVar(&cfg.apps, "apps", 1, "serve the first N applications of the generated pool")
	f.StringSliceVar(&cfg.names, "app", nil, "serve these applications of the pool (app-0001, ...; repeatable)")
	f.Int64Var(&cfg.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.StringVar(&cfg.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	f.DurationVar(&cfg.step, "step", 30*time.Second, "simulation step")
	f.IntVar(&cfg.episode, "episode", 100, "steps per episode")
	f.Uint64Var(&cfg.seed, "seed", 1, "seed of the synthetic load shapes")
	f.DurationVar(&cfg.timeout, "timeout", 0, "bound on each reset or step (0: none)")
	f.BoolVar(&cfg.metrics, "metrics", false, "also serve Prometheus metrics at /metrics (without a token)")
	f.BoolVar(&cfg.cluster, "cluster", false, "serve MPAs of a real cluster instead of simulated applications")
	f.StringVar(&cfg.kubeconfig, "kubeconfig", "", "with --cluster: kubeconfig (default $KUBECONFIG, then in-cluster)")
	f.StringVar(&cfg.prometheus, "prometheus", "", "with --cluster: Prometheus base URL (required)")
	f.StringVar(&cfg.namespace, "namespace", "default", "with --cluster: namespace of the MPAs")
	f.StringSliceVar(&cfg.mpas, "mpa", nil, "with --cluster: serve these MPAs (default: every MPA of --namespace with an external recommender)")
	f.DurationVar(&cfg.actuation, "actuation-timeout", 0, "with --cluster: bound on the wait for a step's action to be actuated once the controller took it (default 3 steps)")
	f.DurationVar(&cfg.pickup, "pickup-timeout", 0, "with --cluster: bound on the wait for the controller to take a step's recommendation (status.appliedRecommendationTime; default 10 steps)")
	return cmd
}

// token reads the token, or checks that going without one is allowed.
func (c envServeConfig) token(log *slog.Logger) (string, error) {
	if c.tokenFile == "" {
		if !c.insecure {
			return "", errors.New("--token-file is required (or --insecure, on a loopback address)")
		}
		host, _, err := net.SplitHostPort(c.addr)
		if err != nil {
			return "", fmt.Errorf("--addr %q: %w", c.addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", fmt.Errorf("--insecure serves without authentication, so only on a loopback address; --addr is %s", c.addr)
		}
		return "", nil
	}
	if c.insecure {
		return "", errors.New("--insecure and --token-file are exclusive")
	}
	tok, err := remote.ReadTokenFile(c.tokenFile)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(c.tokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("token file is readable by other users; chmod 600 it", "file", c.tokenFile, "mode", st.Mode().Perm().String())
	}
	return tok, nil
}

// appIndices are the pool indices (1-based) to serve.
func (c envServeConfig) appIndices() ([]int, error) {
	if len(c.names) == 0 {
		if c.apps < 1 {
			return nil, fmt.Errorf("--apps %d: must be at least 1", c.apps)
		}
		idx := make([]int, c.apps)
		for i := range idx {
			idx[i] = i + 1
		}
		return idx, nil
	}
	seen := map[int]bool{}
	var idx []int
	for _, n := range c.names {
		i, err := parseApp(n)
		if err != nil {
			return nil, err
		}
		if seen[i] {
			return nil, fmt.Errorf("--app %s is given twice", n)
		}
		seen[i] = true
		idx = append(idx, i)
	}
	return idx, nil
}

// envs builds the environments, by name.
func (c envServeConfig) envs(ctx context.Context, log *slog.Logger) (map[string]gym.Env, error) {
	if c.cluster {
		return c.clusterEnvs(ctx, log)
	}
	idx, err := c.appIndices()
	if err != nil {
		return nil, err
	}
	if c.episode < 1 {
		return nil, fmt.Errorf("--episode %d: must be at least 1", c.episode)
	}
	prof, err := calibration.Default()
	if err != nil {
		return nil, err
	}
	all, err := generatePool(prof, c.poolSeed, slices.Max(idx))
	if err != nil {
		return nil, err
	}
	simApps, _, err := simulate(all, c.traces, c.step, c.seed)
	if err != nil {
		return nil, err
	}
	envs := make(map[string]gym.Env, len(idx))
	for _, i := range idx {
		e, err := sim.NewEnv(prof, simApps[i-1], sim.WithStep(c.step), sim.WithEpisode(c.episode))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", all[i-1].Name(), err)
		}
		envs[all[i-1].Name()] = e
	}
	return envs, nil
}

// run serves until ctx is cancelled.
func (c envServeConfig) run(ctx context.Context, out io.Writer, log *slog.Logger) error {
	tok, err := c.token(log)
	if err != nil {
		return err
	}
	envs, err := c.envs(ctx, log)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithLogger(log), remote.WithTimeout(c.timeout)}
	if tok == "" {
		opts = append(opts, remote.WithInsecure())
	}
	var reg *prometheus.Registry
	if c.metrics {
		reg = prometheus.NewRegistry()
		opts = append(opts, remote.WithMetrics(reg))
	}
	srv, err := remote.NewServer(envs, tok, opts...)
	if err != nil {
		return err
	}
	var h http.Handler = srv
	if reg != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/", srv)
		h = mux
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", c.addr, err)
	}
	addr := ln.Addr().String()
	names := srv.Names()
	fmt.Fprintf(out, "serving %d environment(s) (%s) on http://%s/v1/envs\n", len(names), strings.Join(names, ", "), addr)
	if c.listening != nil {
		c.listening(addr)
	}
	return remote.Serve(ctx, ln, h, 10*time.Second, log)
}

// clusterEnvs builds an MPA environment per selected MPA, sharing one
// Prometheus observer (one snapshot per step, as in the controller).
func (c envServeConfig) clusterEnvs(ctx context.Context, log *slog.Logger) (map[string]gym.Env, error) {
	var errs []error
	if c.prometheus == "" {
		errs = append(errs, errors.New("--prometheus: a Prometheus URL is required with --cluster"))
	}
	if c.step <= 0 {
		errs = append(errs, fmt.Errorf("--step %s: must be positive (the controller's --step)", c.step))
	}
	if c.episode < 0 {
		errs = append(errs, fmt.Errorf("--episode %d: must be positive", c.episode))
	}
	if c.actuation < 0 {
		errs = append(errs, fmt.Errorf("--actuation-timeout %s: must be positive", c.actuation))
	}
	if c.pickup < 0 {
		errs = append(errs, fmt.Errorf("--pickup-timeout %s: must be positive", c.pickup))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rc, err := loadRESTConfig(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	src, err := telemetry.New(c.prometheus, telemetry.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	obs := manager.NewSnapshotObserver(src)
	names := c.mpas
	if len(names) == 0 {
		var list v1alpha1.MultidimPodAutoscalerList
		if err := cl.List(ctx, &list, client.InNamespace(c.namespace)); err != nil {
			return nil, fmt.Errorf("MPAs of namespace %s: %w", c.namespace, err)
		}
		for i := range list.Items {
			if p, err := autoscaler.PolicyOf(&list.Items[i]); err == nil && p.External() {
				names = append(names, list.Items[i].Name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no MPA of namespace %s names an external recommender in spec.recommenders (of %d MPAs); name MPAs with --mpa", c.namespace, len(list.Items))
		}
	}
	opts := []mpaenv.Option{mpaenv.WithStep(c.step), mpaenv.WithLogger(log)}
	if c.episode > 0 {
		opts = append(opts, mpaenv.WithEpisode(c.episode))
	}
	if c.actuation > 0 {
		opts = append(opts, mpaenv.WithActuationTimeout(c.actuation))
	}
	if c.pickup > 0 {
		opts = append(opts, mpaenv.WithPickupTimeout(c.pickup))
	}
	envs := make(map[string]gym.Env, len(names))
	for _, n := range names {
		if _, dup := envs[n]; dup {
			return nil, fmt.Errorf("--mpa %s is given twice", n)
		}
		e, err := mpaenv.New(ctx, cl, types.NamespacedName{Namespace: c.namespace, Name: n}, obs, opts...)
		if err != nil {
			return nil, err
		}
		envs[n] = e
	}
	return envs, nil
}
