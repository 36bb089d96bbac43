package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/faults"
	"github.com/aware-autoscaler/aware/infra/cluster"
)

// localTestbed returns the local control plane's binaries (built by
// `aware cluster install`) and this binary's path, for commands that start
// the testbed and this binary's subcommands as processes.
func localTestbed(ctx context.Context, command string) (cluster.Binaries, string, error) {
	bins, err := cluster.Cached(ctx)
	if errors.Is(err, cluster.ErrNotBuilt) {
		return bins, "", fmt.Errorf("%w; then run `%s` again", err, command)
	}
	if err != nil {
		return bins, "", err
	}
	self, err := os.Executable()
	if err != nil {
		return bins, "", fmt.Errorf("%s: the aware binary: %w", command, err)
	}
	return bins, self, nil
}

// removeWorkDir removes a temporary working directory, unless keep is set
// or the command failed (*errp: its logs are then for inspection).
func removeWorkDir(dir string, keep bool, errOut io.Writer, errp *error) {
	if keep || *errp != nil {
		fmt.Fprintf(errOut, "working directory kept: %s\n", dir)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		*errp = fmt.Errorf("removing %s: %w", dir, err)
	}
}

// onLocalPlane runs fn, for command (`aware faults`, `aware bench
// controller`), with the local control plane's binaries, this binary's
// path and a working directory: dir, or a temporary one removed afterwards
// unless keep is set or fn failed.
func onLocalPlane(ctx context.Context, command, dir string, keep bool, errOut io.Writer, fn func(bins cluster.Binaries, self, dir string) error) (err error) {
	bins, self, err := localTestbed(ctx, command)
	if err != nil {
		return err
	}
	if dir == "" {
		name := strings.TrimPrefix(command, "aware ")
		if dir, err = os.MkdirTemp("", "aware-"+strings.ReplaceAll(name, " ", "-")+"-"); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer removeWorkDir(dir, keep, errOut, &err)
	}
	return fn(bins, self, dir)
}

// commandLine is how this process was invoked, for the record.
func commandLine() string {
	args := append([]string{"aware"}, os.Args[1:]...)
	return strings.Join(args, " ")
}

type faultsFlags struct {
	cfg   faults.Config
	keep  bool
	doc   string
	check bool
}

func newFaultsCmd() *cobra.Command {
	var fl faultsFlags
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "Fault-injection suite: the controller over --mpas MPAs on the local control plane while faults come and go",
		Long: `Starts the local control plane, the digital twin of the first --mpas generated applications
scraped by a real Prometheus, a real InfluxDB for trajectories and this binary's ` + "`aware controller`" + `
as its own process with its ClusterRole's rights; once every MPA steps it injects each fault of
--faults mid-episode and reverts it: Prometheus stopped (--prometheus-down), InfluxDB stopped
(--influx-down), kube-apiserver restarted, etcd paused (--etcd-pause), the controller SIGKILLed
--kills times in a row, one pod each of four MPAs exporting NaN, +Inf, negative or no metrics
(--bad-metrics), malformed objects (MPAs CEL must refuse, a missing target, a Deployment
deleted under its MPA) and --burst MPAs created and deleted at once. It prints one table: per
fault the trajectory steps the controller recorded and how many of them InfluxDB lacks at the
end, the episodes abandoned or with a gap, the time until every MPA recorded a step again (for
InfluxDB until it holds every step), the steps taken from data that could only be stale or bad
(rounds whose metrics window lay wholly in the Prometheus outage or in an MPA's bad metrics),
the controller's requests the API server refused (its audit log) and the controller's crashes.
Expected: nothing lost, no wrong action, no refused request, no crash (--check makes anything
else an error). With the defaults it takes about 15
minutes and most of 2 cores. --doc replaces the table between the markers of a Markdown file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onLocalPlane(cmd.Context(), "aware faults", fl.cfg.Dir, fl.keep, cmd.ErrOrStderr(), func(bins cluster.Binaries, self, dir string) error {
				cfg := fl.cfg
				cfg.Binaries, cfg.Controller, cfg.Log, cfg.Dir = bins, []string{self, "controller"}, slog.Default(), dir
				return faults.RunTo(cmd.Context(), cfg, faults.Output{Command: commandLine(), Doc: fl.doc, Check: fl.check}, cmd.OutOrStdout())
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.cfg.MPAs, "mpas", 100, "generated applications, one MPA each (the first N of the pool)")
	f.DurationVar(&fl.cfg.Step, "step", 5*time.Second, "the controller's step")
	f.DurationVar(&fl.cfg.PrometheusDown, "prometheus-down", 2*time.Minute, "how long Prometheus is stopped")
	f.DurationVar(&fl.cfg.InfluxDown, "influx-down", 5*time.Minute, "how long InfluxDB is stopped")
	f.DurationVar(&fl.cfg.EtcdPause, "etcd-pause", 30*time.Second, "how long etcd is paused")
	f.DurationVar(&fl.cfg.BadMetrics, "bad-metrics", time.Minute, "how long some pods export bad metrics")
	f.IntVar(&fl.cfg.Kills, "kills", 3, "SIGKILLs of the controller in a row")
	f.IntVar(&fl.cfg.Burst, "burst", 1000, "MPAs created and deleted at once")
	f.StringSliceVar(&fl.cfg.Faults, "faults", faults.All, "faults to inject, in this order: "+strings.Join(faults.All, ", "))
	f.StringVar(&fl.cfg.Dir, "dir", "", "working directory, empty or absent (default: a temporary one, removed afterwards unless --keep or a failure)")
	f.BoolVar(&fl.keep, "keep", false, "keep the temporary working directory (logs, data)")
	f.StringVar(&fl.doc, "doc", "", "Markdown file whose <!-- faults:begin --> … <!-- faults:end --> section receives the table")
	f.BoolVar(&fl.check, "check", false, "fail when a fault lost something, acted wrongly, met a refusal or crashed the controller")
	return cmd
}
