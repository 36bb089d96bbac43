package baselines

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Factory builds one autoscaler per application.
type Factory struct {
	Name string
	New  func(b recommender.Bounds, step time.Duration, cpuTarget float64) (recommender.Recommender, error)
}

// static keeps the initial allocation: the no-autoscaler reference.
type static struct{}

func (static) Name() string { return "static" }
func (static) Recommend(o recommender.Observation) recommender.Allocation {
	return o.Current
}

// Factories are the baselines, in table order.
func Factories() []Factory {
	return []Factory{
		{"static", func(recommender.Bounds, time.Duration, float64) (recommender.Recommender, error) {
			return static{}, nil
		}},
		{"hpa", func(b recommender.Bounds, step time.Duration, t float64) (recommender.Recommender, error) {
			return hpa.New(b, step, hpa.WithTarget(t))
		}},
		{"vpa", func(b recommender.Bounds, step time.Duration, _ float64) (recommender.Recommender, error) {
			return vpa.New(b, step)
		}},
		{"hpa+vpa", func(b recommender.Bounds, step time.Duration, t float64) (recommender.Recommender, error) {
			return mpa.New(b, step, mpa.WithHPA(hpa.WithTarget(t)))
		}},
	}
}

// Find returns the factory named name ("static", "hpa", "vpa" or "hpa+vpa").
func Find(name string) (Factory, bool) {
	for _, f := range Factories() {
		if f.Name == name {
			return f, true
		}
	}
	return Factory{}, false
}

// RecommenderBounds is b as the recommenders take it.
func RecommenderBounds(b gym.Bounds) recommender.Bounds {
	return recommender.Bounds{MinReplicas: b.MinReplicas, MaxReplicas: b.MaxReplicas, MinCPU: b.MinCPU, MaxCPU: b.MaxCPU, MinMemory: b.MinMemory, MaxMemory: b.MaxMemory}
}

// Observe is what a recommender sees at time now of an application whose
// allocation in effect is cur and whose last step measured m.
func Observe(now time.Duration, cur gym.Allocation, m gym.Metrics) recommender.Observation {
	return recommender.Observation{
		Time:          now,
		Current:       recommender.Allocation{Replicas: cur.Replicas, CPU: cur.CPU, Memory: cur.Memory},
		ReadyReplicas: m.ReadyReplicas,
		CPUUsage:      m.CPUUsage,
		MemoryUsage:   m.MemoryUsage,
		MemoryPeak:    m.MemoryPeak,
		OOMKills:      m.OOMKills,
		ArrivalRate:   m.ArrivalRate,
		ProcessedRate: m.ProcessedRate,
		LatencyP99:    m.LatencyP99,
	}
}

// Result aggregates one baseline over every application and step.
type Result struct {
	Baseline string `json:"baseline"`
	Apps     int    `json:"apps"`
	Steps    int    `json:"steps"`
	// MeanReward is the mean per-step reward (in [0, 2]);
	// EpisodeReward is the mean reward of a 100-step episode.
	MeanReward    float64 `json:"meanReward"`
	EpisodeReward float64 `json:"episodeReward"`
	// CPUUtil and MemoryUtil are mean usage over limits of desired pods.
	CPUUtil    float64 `json:"cpuUtil"`
	MemoryUtil float64 `json:"memoryUtil"`
	// SLOViolations is the fraction of app-steps with SP < 1.
	SLOViolations float64 `json:"sloViolations"`
	OOMKills      int     `json:"oomKills"`
	// Dropped is the fraction of arrived requests lost.
	Dropped float64 `json:"dropped"`
	// Replicas and CPUCores are the mean desired replicas and CPU cores
	// allocated per application.
	Replicas float64 `json:"replicas"`
	CPUCores float64 `json:"cpuCores"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
}

// Config is one run.
type Config struct {
	Steps int
	Seed  uint64
	// CPUTargets are per-app HPA utilisation targets (0.8 when nil).
	CPUTargets []float64
	// Progress is called after each step with the steps done.
	Progress func(done int)
}

// Run drives cl (fresh, reset by Run) with one autoscaler per application
// from f for cfg.Steps steps.
func Run(ctx context.Context, cl *sim.Cluster, f Factory, cfg Config) (Result, error) {
	if cfg.Steps < 1 {
		return Result{}, fmt.Errorf("baselines: steps %d must be positive", cfg.Steps)
	}
	start := time.Now()
	n := cl.Len()
	b := RecommenderBounds(cl.Bounds())
	step := time.Duration(cl.StepSeconds() * float64(time.Second))
	recs := make([]recommender.Recommender, n)
	for i := range recs {
		t := 0.8
		if i < len(cfg.CPUTargets) && cfg.CPUTargets[i] > 0 {
			t = cfg.CPUTargets[i]
		}
		r, err := f.New(b, step, t)
		if err != nil {
			return Result{}, fmt.Errorf("baselines: %s for %s: %w", f.Name, cl.App(i).Name, err)
		}
		recs[i] = r
	}
	obs := make([]float64, n*gym.StateDim)
	if err := cl.Reset(ctx, cfg.Seed, obs); err != nil {
		return Result{}, err
	}
	acc := make([]accum, n)
	for t := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		now := time.Duration(t+1) * step
		err := cl.ForEach(ctx, func(i int) {
			a := cl.Allocation(i)
			next := recs[i].Recommend(Observe(now, gym.Allocation{Replicas: a.Replicas, CPU: a.CPU, Memory: a.Memory}, cl.Metrics(i)))
			cl.Set(i, sim.Allocation{Replicas: next.Replicas, CPU: next.CPU, Memory: next.Memory})
		})
		if err != nil {
			return Result{}, err
		}
		if err := cl.Advance(ctx); err != nil {
			return Result{}, err
		}
		for i := range acc {
			acc[i].add(cl.Info(i), cl.Reward(i), cl.StepSeconds())
		}
		if cfg.Progress != nil {
			cfg.Progress(t + 1)
		}
	}
	r := Result{Baseline: f.Name, Apps: n, Steps: cfg.Steps, Seconds: time.Since(start).Seconds()}
	var total accum
	for _, a := range acc {
		total.merge(a)
	}
	k := float64(total.steps)
	r.MeanReward = total.reward / k
	r.EpisodeReward = r.MeanReward * 100
	r.CPUUtil, r.MemoryUtil = total.cpu/k, total.mem/k
	r.SLOViolations = float64(total.violations) / k
	r.OOMKills = total.ooms
	if total.arrived > 0 {
		r.Dropped = total.dropped / total.arrived
	}
	r.Replicas, r.CPUCores = total.replicas/k, total.cores/k
	if total.steps == 0 {
		return r, errors.New("baselines: nothing was simulated")
	}
	return r, nil
}

type accum struct {
	steps, violations, ooms           int
	reward, cpu, mem, replicas, cores float64
	arrived, dropped                  float64
}

func (a *accum) add(info gym.Info, reward, dt float64) {
	m := info.Metrics
	cu, mu := gym.Utilization(m)
	a.steps++
	a.reward += reward
	a.cpu += cu
	a.mem += mu
	if info.SLOViolated {
		a.violations++
	}
	a.ooms += m.OOMKills
	a.arrived += m.ArrivalRate * dt
	a.dropped += m.DroppedRate * dt
	a.replicas += float64(m.Replicas)
	a.cores += float64(m.Replicas) * m.CPULimit
}

func (a *accum) merge(b accum) {
	a.steps += b.steps
	a.violations += b.violations
	a.ooms += b.ooms
	a.reward += b.reward
	a.cpu += b.cpu
	a.mem += b.mem
	a.replicas += b.replicas
	a.cores += b.cores
	a.arrived += b.arrived
	a.dropped += b.dropped
}
