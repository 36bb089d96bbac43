package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/toolchain"
)

// driverCommands are run by the aware-testbed binary, which carries the
// Pulumi SDK that the aware binary leaves out.
var driverCommands = []string{"up", "preview", "status", "down", "render", "cost", "image"}

func newTestbedCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testbed",
		Short: "Stand up an AWARE testbed (cluster, Prometheus, InfluxDB, MPA controller, agents, apps) with Pulumi",
		Long: `"aware testbed up|preview|status|down|render|cost|image" run the aware-testbed binary (beside this one,
or on $PATH; make build builds both), which carries the Pulumi SDK: it stays out of this binary,
which every workload pod and the controller run. "up" and "preview" build the Pulumi CLI and
Kubernetes provider on first use (about 9 minutes once, a line says so); "aware testbed install"
builds them ahead. See aware-testbed --help and docs/testbed.md.`,
	}
	for _, name := range driverCommands {
		cmd.AddCommand(&cobra.Command{
			Use:                name,
			Short:              "Run aware-testbed " + name + " (aware testbed " + name + " --help for its flags)",
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runDriver(cmd.Context(), append([]string{name}, args...))
			},
		})
	}
	cmd.AddCommand(newTestbedInstallCmd(), newTestbedLocalRunCmd())
	return cmd
}

// runDriver runs aware-testbed with args, attached to this process's
// standard streams.
func runDriver(ctx context.Context, args []string) error {
	bin, err := driverBinary()
	if err != nil {
		return err
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = time.Minute
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("aware-testbed %s: %w", args[0], err)
		}
		return err
	}
	return nil
}

// driverBinary is the aware-testbed binary beside this one, else on $PATH.
func driverBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), "aware-testbed")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	p, err := exec.LookPath("aware-testbed")
	if err != nil {
		return "", errors.New("aware-testbed not found beside aware or on $PATH: make build builds it into .bin/ (or go build -o .bin/aware-testbed ./cmd/aware-testbed)")
	}
	return p, nil
}

func newTestbedInstallCmd() *cobra.Command {
	var cache string
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Build the pinned Pulumi CLI and Kubernetes provider into the cache if they are not there (up and preview do on first use)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cache == "" {
				d, err := toolchain.DefaultCacheDir()
				if err != nil {
					return err
				}
				cache = d
			}
			_, err := toolchain.Install(cmd.Context(), cache, toolchain.DefaultVersions(), cmd.ErrOrStderr())
			return err
		},
	}
	cmd.Flags().StringVar(&cache, "cache", "", "tool cache (default $XDG_CACHE_HOME/aware/pulumi)")
	return cmd
}

// newTestbedLocalRunCmd is the local target's supervisor, started by up.
func newTestbedLocalRunCmd() *cobra.Command {
	var cfg local.Config
	cmd := &cobra.Command{
		Use:    "local-run",
		Short:  "Run the local target's processes (twin, Prometheus, InfluxDB, controller, agents) until SIGTERM; started by up",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Aware = exe
			cfg.Log = slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return local.Run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "state directory")
	f.StringVar(&cfg.ClusterDir, "cluster-dir", "", "the running control plane's directory")
	f.IntVar(&cfg.Apps, "apps", 1000, "applications")
	f.Int64Var(&cfg.PoolSeed, "pool-seed", 1, "seed of the pool")
	f.Uint64Var(&cfg.SelectSeed, "select-seed", 0, "seed of the selection (0: the first --apps)")
	f.StringVar(&cfg.Namespace, "namespace", "aware-system", "the testbed's namespace (service accounts)")
	f.StringVar(&cfg.AppsNamespace, "apps-namespace", "aware-apps", "the apps' namespace")
	f.DurationVar(&cfg.Step, "step", 15*time.Second, "the controller's step")
	f.Float64Var(&cfg.TimeScale, "time-scale", local.DefaultTimeScale, "simulated seconds per wall second: the twin ticks every min(1s, --step/3) and advances that times this per tick (a whole number of seconds); the controller and the agent runner get it")
	f.BoolVar(&cfg.Agents, "agents", true, "run the agent runner")
	f.BoolVar(&cfg.Webhook, "webhook", true, "serve the admission webhook")
	tracesFlag(f, &cfg.Traces)
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the twin")
	return cmd
}
