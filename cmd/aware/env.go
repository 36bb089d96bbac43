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
	// listening, if set, is told the address once the server listens.
	listening func(addr string)
}

func newEnvServeCmd() *cobra.Command {
	var cfg envServeConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve simulated generated applications as gym environments over HTTP/JSON",
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
synthetic ones when they are absent. The Python client is gym/remote/python/aware_env.py.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("apps") && len(cfg.names) > 0 {
				return errors.New("--apps and --app are exclusive: serve the first N applications, or the named ones")
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

// envs builds the simulated environments, by application name.
func (c envServeConfig) envs() (map[string]gym.Env, error) {
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
	envs, err := c.envs()
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
