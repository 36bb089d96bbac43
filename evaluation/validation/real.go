package validation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/trace"
)

// RealConfig tells Real how to run the workload server.
type RealConfig struct {
	// Exe is the aware binary, run as `aware workload serve`.
	Exe string
	// Env is added to the child's environment (object store and database).
	Env []string
	// Dir holds specs, logs and scratch files.
	Dir string
	// Warmup is a constant load at the case's mean rate before measuring.
	Warmup time.Duration
	// Seed places arrivals within each second.
	Seed uint64
	// Placement, when not nil, confines the server to its own CPUs (Place).
	Placement *Placement
}

// rssInterval is how often Real samples the server's resident set.
const rssInterval = 100 * time.Millisecond

// Real runs c for real: a workload server child with GOMAXPROCS =
// ceil(CPU), --concurrency c.Concurrency and, where the machine allows, a
// cgroup CPU quota of CPU cores; the load generator replays c.Rates open
// loop. It returns what was measured (memory: the child's VmRSS sampled
// every 100 ms over the replayed window and averaged) and how.
func Real(ctx context.Context, cfg RealConfig, c Case) (Measured, Method, error) {
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-%dm", c.App, int(math.Round(c.CPU*1000))))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Measured{}, Method{}, err
	}
	spec := app.Spec{APIVersion: app.SpecVersion, Kind: "App", Name: c.App, Seed: int64(cfg.Seed), Segments: c.Chain}
	procs := int(math.Max(1, math.Ceil(c.CPU-1e-9)))
	args := []string{"--gomaxprocs", strconv.Itoa(procs)}
	if c.Concurrency > 0 {
		args = append(args, "--concurrency", strconv.Itoa(c.Concurrency))
	}
	child, err := server.StartApp(cfg.Exe, spec, dir, "", args, localproc.WithEnv(append(os.Environ(), cfg.Env...)))
	if err != nil {
		return Measured{}, Method{}, err
	}
	var quota, pinned *cpuQuota
	defer func() {
		if err := child.Stop(20 * time.Second); err != nil && !errors.Is(err, localproc.ErrExited) {
			fmt.Fprintf(os.Stderr, "stop workload server of %s: %v\n", c.App, err)
		}
		_ = quota.remove()
		_ = pinned.remove()
	}()
	if err := child.WaitReady(ctx, 2*time.Minute); err != nil {
		return Measured{}, Method{}, fmt.Errorf("%s: %w\n%s", c.App, err, child.LogTail())
	}
	group := fmt.Sprintf("aware-validate-%d-%s", os.Getpid(), filepath.Base(dir))
	quota, qdesc := limitCPU(child.Pid(), c.CPU, group, cfg.Placement)
	if pinned, err = cfg.Placement.pin(child.Pid(), group); err != nil {
		return Measured{}, Method{}, fmt.Errorf("%s: pin the server to CPU %s: %w", c.App, cfg.Placement.Server, err)
	}
	if cfg.Placement != nil && cfg.Placement.Server != "" {
		qdesc += ", CPU " + cfg.Placement.Server
	}
	desc := Method{Quota: qdesc, MemorySource: MemoryVmRSS}

	gen, err := loadgen.New(child.URL()+"/invoke", loadgen.WithTimeout(30*time.Second), loadgen.WithMaxOutstanding(20000))
	if err != nil {
		return Measured{}, desc, err
	}
	mean := c.MeanRate()
	if cfg.Warmup > 0 && mean > 0 {
		warm, err := loadgen.Constant(mean, cfg.Warmup)
		if err != nil {
			return Measured{}, desc, err
		}
		if _, err := gen.Run(ctx, warm); err != nil {
			return Measured{}, desc, fmt.Errorf("%s: warm-up: %w", c.App, err)
		}
	}
	arr, err := trace.Arrivals(trace.Series{Name: c.Trace, Step: time.Second, Values: c.Rates}, cfg.Seed)
	if err != nil {
		return Measured{}, desc, err
	}
	sched, err := loadgen.NewSchedule(arr, time.Duration(len(c.Rates))*time.Second)
	if err != nil {
		return Measured{}, desc, err
	}
	cpu0, err := processCPU(child.Pid())
	if err != nil {
		return Measured{}, desc, err
	}
	self0, err := selfCPU()
	if err != nil {
		return Measured{}, desc, err
	}
	rss := sampleRSS(child.Pid(), rssInterval)
	rep, err := gen.Run(ctx, sched)
	mem, rssErr := rss.mean()
	if err != nil {
		return Measured{}, desc, fmt.Errorf("%s: replay: %w", c.App, err)
	}
	if rssErr != nil {
		return Measured{}, desc, fmt.Errorf("%s: resident set: %w", c.App, rssErr)
	}
	cpu1, err := processCPU(child.Pid())
	if err != nil {
		return Measured{}, desc, err
	}
	self1, err := selfCPU()
	if err != nil {
		return Measured{}, desc, err
	}
	if rep.Failed > 0 || rep.Dropped > 0 {
		fmt.Fprintf(os.Stderr, "%s at %.2f cores: %d failed, %d dropped (%v)\n", c.App, c.CPU, rep.Failed, rep.Dropped, rep.Errors)
	}
	secs := rep.Duration.Seconds()
	m := Measured{CPU: (cpu1 - cpu0) / secs, Throughput: float64(rep.Completed) / secs, P95: rep.Latency.P95.Seconds(), P50: rep.Latency.P50.Seconds(), Memory: mem}
	if rep.Completed > 0 {
		m.Client = (self1 - self0) / float64(rep.Completed)
	}
	return m, desc, nil
}
