package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/manifests"
	"github.com/aware-autoscaler/aware/testbed/toolchain"
)

// testbedFlags are the flags shared by the testbed's commands.
type testbedFlags struct {
	dir, stack, target, kubeconfig, kctx, traces, aware string
	apps                                                int
	poolSeed                                            int64
	selectSeed                                          uint64
	trace                                               string
	loadScale                                           float64
	image                                               string
	agents, webhook                                     bool
	step                                                time.Duration
	timeScale                                           float64
	updateMode, source                                  string
	kind                                                testbed.KindConfig
	gke                                                 testbed.GKEConfig
}

func (fl *testbedFlags) register(f *pflag.FlagSet, withConfig bool) {
	f.StringVar(&fl.dir, "dir", "out/testbed", "testbed state: Pulumi state and home, passphrase, and the local target's cluster and processes")
	f.StringVar(&fl.stack, "stack", testbed.DefaultStack, "Pulumi stack name")
	f.StringVar(&fl.aware, "aware", "", "the aware binary the local target runs (default: the one beside this binary, then $PATH)")
	if !withConfig {
		return
	}
	f.StringVar(&fl.target, "target", string(testbed.DefaultConfig().Target), testbed.TargetHelp())
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required with --target kubeconfig)")
	f.StringVar(&fl.kctx, "context", "", "kubeconfig context (default: its current one)")
	f.IntVar(&fl.apps, "apps", testbed.PoolSize, "applications of the generated pool to deploy")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool (aware generate --seed)")
	f.Uint64Var(&fl.selectSeed, "select-seed", 0, "seed choosing --apps of the pool (0: the first ones)")
	f.StringVar(&fl.trace, "trace", "synthetic", `what the load generator Jobs replay: "synthetic", "constant", "poisson" or a trace path in the image`)
	f.Float64Var(&fl.loadScale, "load-scale", 1, "multiplies each app's mean request rate")
	f.StringVar(&fl.image, "image", "", "the aware image of the controller, agents, apps and load (default "+manifests.DefaultImages().Aware+")")
	f.BoolVar(&fl.agents, "agents", true, "run the AWARE agent runner")
	f.BoolVar(&fl.webhook, "webhook", true, "serve the admission webhook that sizes new pods")
	f.DurationVar(&fl.step, "step", 15*time.Second, "the controller's step")
	f.Float64Var(&fl.timeScale, "time-scale", testbed.DefaultConfig().TimeScale, "local target: simulated seconds per wall second; the digital twin plays the apps this much faster than the wall clock and the controller's recommenders follow its time (the twin ticks every min(1s, --step/3), advancing a whole number of seconds per tick); other targets run in real time and take only the default")
	f.StringVar(&fl.traces, "traces", generator.TracesDir, "local target: the twin's "+generator.TracesHelp)
	f.StringVar(&fl.updateMode, "update-mode", string(v1alpha1.UpdateModeInPlaceOrRecreate), "the apps' MPAs' update mode (InPlaceOrRecreate falls back to Recreate, with a warning, on clusters before Kubernetes 1.33)")
	f.StringVar(&fl.source, "source", "", "kind target: the project's source the aware image is built from (default: the module of the working directory)")
	dk, dg := testbed.DefaultKindConfig(), testbed.DefaultGKEConfig()
	f.StringVar(&fl.kind.NodeImage, "kind-node-image", dk.NodeImage, "kind target: node image")
	f.IntVar(&fl.kind.Workers, "kind-workers", dk.Workers, "kind target: worker nodes besides the control plane")
	f.StringVar(&fl.gke.Project, "gke-project", "", "gke target: GCP project (default: the gcp provider's gcp:project)")
	f.StringVar(&fl.gke.Location, "gke-location", dg.Location, "gke target: zone (or region: nodes in each of its zones)")
	f.StringVar(&fl.gke.MachineType, "gke-machine-type", dg.MachineType, "gke target: node machine type")
	f.IntVar(&fl.gke.Nodes, "gke-nodes", 0, "gke target: node pool size (0: sized from the apps' requests, twice over)")
	f.IntVar(&fl.gke.DiskGB, "gke-disk-gb", dg.DiskGB, "gke target: each node's disk")
}

func (fl testbedFlags) config() testbed.Config {
	cfg := testbed.DefaultConfig()
	cfg.Target, cfg.Kubeconfig, cfg.Context = testbed.Target(fl.target), fl.kubeconfig, fl.kctx
	cfg.Apps, cfg.PoolSeed, cfg.SelectSeed = fl.apps, fl.poolSeed, fl.selectSeed
	o := &cfg.Options
	o.Trace, o.LoadScale, o.Agents, o.Webhook, o.Step = fl.trace, fl.loadScale, fl.agents, fl.webhook, fl.step
	if fl.image != "" {
		o.Images.Aware = fl.image
	}
	o.AppOptions.UpdateMode = v1alpha1.UpdateMode(fl.updateMode)
	cfg.Kind, cfg.GKE, cfg.TimeScale = fl.kind, fl.gke, fl.timeScale
	return cfg
}

// driver is the testbed driver of the flags, its progress to out. With a
// buildLog (up, preview) the Pulumi toolchain is built on first use, after
// a line on buildLog saying what and how long; without (status, down) it
// must be there.
func (fl testbedFlags) driver(ctx context.Context, out, buildLog io.Writer) (*testbed.Driver, error) {
	var tools toolchain.Tools
	var err error
	if buildLog != nil {
		tools, err = toolchain.Ensure(ctx, buildLog)
	} else {
		tools, err = toolchain.Cached(ctx)
	}
	if err != nil {
		return nil, err
	}
	aware, err := awareBinary(fl.aware)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(fl.dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &testbed.Driver{Dir: dir, Stack: fl.stack, Tools: tools, Aware: aware, Traces: fl.traces, Out: out, Source: fl.source}, nil
}

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "aware-testbed",
		Short:         "Stand up an AWARE testbed (cluster, Prometheus, InfluxDB, MPA controller, agents, apps) with Pulumi",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `Run as "aware testbed …" (which runs this binary) or directly. Deploys the testbed's Pulumi program (testbed/) through the Automation API, with the
Pulumi CLI and Kubernetes provider built from the module proxy (by up or preview on first use,
about 9 minutes once, or ahead by "aware testbed install"), a local file backend
and a passphrase in --dir: no Pulumi account and no downloads. The local target starts the
project's control plane (kwok nodes) and runs the controller, agent runner, Prometheus,
InfluxDB and the digital twin as local processes; the kubeconfig target deploys all of them
as pods on any cluster.`,
	}
	var fl testbedFlags
	up := &cobra.Command{
		Use:   "up",
		Short: "Deploy the testbed (again: apply what changed; nothing if nothing did)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := fl.driver(cmd.Context(), cmd.ErrOrStderr(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if _, _, err := d.Up(cmd.Context(), fl.config()); err != nil {
				return err
			}
			return showStatus(cmd, d)
		},
	}
	fl.register(up.Flags(), true)
	preview := &cobra.Command{
		Use:   "preview",
		Short: "Show what up would change",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := fl.config()
			if err := cfg.Previewable(); err != nil {
				return err
			}
			d, err := fl.driver(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			_, err = d.Preview(cmd.Context(), cfg)
			return err
		},
	}
	fl.register(preview.Flags(), true)
	down := &cobra.Command{
		Use:   "down",
		Short: "Delete everything up made (the local target's control plane and processes too) and the stack",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := fl.driver(cmd.Context(), cmd.ErrOrStderr(), nil)
			if err != nil {
				return err
			}
			return d.Down(cmd.Context())
		},
	}
	fl.register(down.Flags(), false)
	status := &cobra.Command{
		Use:   "status",
		Short: "Print the stack's outputs, the local processes and the MPAs by agent stage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := fl.driver(cmd.Context(), cmd.ErrOrStderr(), nil)
			if err != nil {
				return err
			}
			return showStatus(cmd, d)
		},
	}
	fl.register(status.Flags(), false)
	cmd.AddCommand(up, preview, down, status, newRenderCmd(), newCostCmd(), newImageCmd())
	return cmd
}

// showStatus prints the driver's status to cmd's output.
func showStatus(cmd *cobra.Command, d *testbed.Driver) error {
	st, err := d.Status(cmd.Context())
	if err != nil {
		return err
	}
	printStatus(cmd.OutOrStdout(), st)
	return nil
}

func printStatus(w io.Writer, st testbed.Status) {
	if len(st.Outputs) == 0 {
		fmt.Fprintf(w, "stack %s: not deployed\n", st.Stack)
		return
	}
	fmt.Fprintf(w, "stack %s\n", st.Stack)
	keys := make([]string, 0, len(st.Outputs))
	for k := range st.Outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := st.Outputs[k].Value; v != "" {
			fmt.Fprintf(w, "  %-14s %v\n", k, v)
		}
	}
	if st.Local != nil {
		fmt.Fprintf(w, "local processes (supervisor pid %d)\n  prometheus     %s\n  influxdb       %s\n  controller     %s\n  twin           %s\n",
			st.Local.Pid, st.Local.Prometheus, st.Local.InfluxDB, st.Local.Controller, st.Local.Twin)
		if st.Local.Agents != "" {
			fmt.Fprintf(w, "  agents         %s\n", st.Local.Agents)
		}
	}
	stages := make([]string, 0, len(st.Stages))
	for s := range st.Stages {
		stages = append(stages, s)
	}
	slices.Sort(stages)
	var parts []string
	for _, s := range stages {
		name := s
		if name == "" {
			name = "no agent status yet"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, st.Stages[s]))
	}
	fmt.Fprintf(w, "MPAs %d: %s\n", st.MPAs, strings.Join(parts, ", "))
}

func newRenderCmd() *cobra.Command {
	var fl testbedFlags
	var job manifests.StudyJobSpec
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Write the testbed's Kubernetes objects as YAML (what up deploys; for kubectl apply), or with --study-job the Indexed Job that runs studies sharded on it",
		Example: `  aware testbed render --target kubeconfig --apps 20 > testbed.yaml
  aware testbed render --target kubeconfig --study-job bootstrapping,serving --study-size full --study-shards 4 > studies.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := fl.config().ForTarget()
			if cfg.Kubeconfig == "" {
				cfg.Kubeconfig = "-" // not used to render
			}
			if len(job.Studies) == 0 {
				for _, name := range []string{"study-size", "study-shards", "study-parallelism", "study-results"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s: only with --study-job", name)
					}
				}
			}
			if len(job.Studies) > 0 && cfg.Target == testbed.TargetLocal {
				return fmt.Errorf("--study-job with --target local: its nodes are kwok's and run no containers, so the Job's pods would never run; shard as processes instead: aware study NAMES --quick|--full --shard I/N --results s3://BUCKET/PREFIX on each of N processes or machines, then aware study merge NAME s3://BUCKET/PREFIX (docs/testbed.md)")
			}
			if len(job.Studies) > 0 {
				// The Job refers to the external services' Secret by
				// name; the keys drawn here are not rendered.
				c, err := testbed.NewCredentials()
				if err != nil {
					return err
				}
				cfg.Credentials = c
				o, err := cfg.Resolve()
				if err != nil {
					return err
				}
				objs, err := manifests.StudyJob(o, job)
				if err != nil {
					return err
				}
				return manifests.WriteYAML(cmd.OutOrStdout(), []manifests.Set{{Component: manifests.ComponentStudy, Objects: objs}})
			}
			sets, err := objects(cfg)
			if err != nil {
				return err
			}
			return manifests.WriteYAML(cmd.OutOrStdout(), sets)
		},
	}
	fl.register(cmd.Flags(), true)
	f := cmd.Flags()
	f.StringSliceVar(&job.Studies, "study-job", nil, "render only the Indexed Job running these studies (aware study NAMES…) sharded on the cluster, its shards' results kept in the testbed's object store (docs/testbed.md)")
	f.StringVar(&job.Size, "study-size", manifests.StudyQuick, "with --study-job: quick or full")
	f.IntVar(&job.Shards, "study-shards", 1, "with --study-job: shards, one pod per completion index")
	f.IntVar(&job.Parallelism, "study-parallelism", 0, "with --study-job: pods at once (0: all)")
	f.StringVar(&job.Results, "study-results", "", "with --study-job: the object store's folder s3://BUCKET/PREFIX where the shards keep their results (default s3://aware/studies/<job name>, so a Job applied again under its name resumes there: give each run its own); aware study merge STUDY s3://BUCKET/PREFIX puts them together")
	return cmd
}

// objects are the objects cfg deploys, with fresh credentials for the
// external services (a stack keeps its own).
func objects(cfg testbed.Config) ([]manifests.Set, error) {
	if cfg.Options.Components.ExternalServices {
		c, err := testbed.NewCredentials()
		if err != nil {
			return nil, err
		}
		cfg.Credentials = c
	}
	o, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	return manifests.Build(o, cfg.Credentials)
}

// awareBinary is the aware binary the local target's supervisor runs:
// flag, else the one beside this executable, else $PATH.
func awareBinary(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), "aware")
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	p, err := exec.LookPath("aware")
	if err != nil {
		return "", errors.New("no aware binary beside aware-testbed or on $PATH (make build builds both into .bin/; or pass --aware)")
	}
	return filepath.Abs(p)
}
