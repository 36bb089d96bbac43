package faults

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/infra/cluster"
)

// The faults, in the order they run.
const (
	FaultPrometheus = "prometheus"
	FaultInfluxDB   = "influxdb"
	FaultAPIServer  = "apiserver"
	FaultEtcd       = "etcd"
	FaultSIGKILL    = "sigkill"
	FaultMetrics    = "metrics"
	FaultObjects    = "objects"
	FaultBurst      = "burst"
)

// All is every fault, in order.
var All = []string{FaultPrometheus, FaultInfluxDB, FaultAPIServer, FaultEtcd, FaultSIGKILL, FaultMetrics, FaultObjects, FaultBurst}

// Config configures Run.
type Config struct {
	// MPAs is the number of generated applications with their MPAs
	// (default 100).
	MPAs int
	// Step is the controller's step (default 5 s).
	Step time.Duration
	// PrometheusDown, InfluxDown and EtcdPause are the outages (defaults
	// 2 min, 5 min and 30 s); BadMetrics how long some pods export bad
	// metrics (default 1 min); Kills the SIGKILLs in a row (default 3);
	// Burst the MPAs created and deleted at once (default 1000).
	PrometheusDown, InfluxDown, EtcdPause, BadMetrics time.Duration
	Kills, Burst                                      int
	// Faults are the faults to run, in All's order (default All).
	Faults []string
	// Dir is the working directory, empty or absent. Required.
	Dir string
	// Binaries are the control plane's executables. Required.
	Binaries cluster.Binaries
	// Controller is the argv prefix that runs `aware controller` itself,
	// e.g. {os.Executable(), "controller"}. Required.
	Controller []string
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	def := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	if c.MPAs == 0 {
		c.MPAs = 100
	}
	def(&c.Step, 5*time.Second)
	def(&c.PrometheusDown, 2*time.Minute)
	def(&c.InfluxDown, 5*time.Minute)
	def(&c.EtcdPause, 30*time.Second)
	def(&c.BadMetrics, time.Minute)
	if c.Kills == 0 {
		c.Kills = 3
	}
	if c.Burst == 0 {
		c.Burst = 1000
	}
	if len(c.Faults) == 0 {
		c.Faults = All
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if c.MPAs < 1 || c.MPAs > 1000 {
		errs = append(errs, fmt.Errorf("faults: MPAs %d: must be 1 to 1000 (the generated pool)", c.MPAs))
	}
	if c.Step < time.Second || c.Step%time.Second != 0 {
		errs = append(errs, fmt.Errorf("faults: step %s: whole seconds, at least 1s", c.Step))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Prometheus outage", c.PrometheusDown}, {"InfluxDB outage", c.InfluxDown}, {"etcd pause", c.EtcdPause}, {"bad metrics", c.BadMetrics}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("faults: %s %s: negative", d.name, d.v))
		}
	}
	if c.Kills < 1 || c.Burst < 1 {
		errs = append(errs, fmt.Errorf("faults: kills %d and burst %d must be positive", c.Kills, c.Burst))
	}
	if slices.Contains(c.Faults, FaultMetrics) && c.MPAs <= len(badKinds) {
		errs = append(errs, fmt.Errorf("faults: MPAs %d: the %s fault spoils %d MPAs' metrics and needs others that keep stepping", c.MPAs, FaultMetrics, len(badKinds)))
	}
	for _, f := range c.Faults {
		if !slices.Contains(All, f) {
			errs = append(errs, fmt.Errorf("faults: unknown fault %q (known: %s)", f, strings.Join(All, ", ")))
		}
	}
	switch {
	case c.Dir == "":
		errs = append(errs, errors.New("faults: Config.Dir is required"))
	case len(c.Controller) == 0:
		errs = append(errs, errors.New("faults: Config.Controller (the argv of `aware controller`) is required"))
	}
	return c, errors.Join(errs...)
}
