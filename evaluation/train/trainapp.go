package train

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// TrainAppConfig is `aware train`: one agent trained on one application
// of the generated pool, in the simulator.
type TrainAppConfig struct {
	// Algo is the algorithm (--algo) and Mapping its actions' mapping
	// (--actions).
	Algo    string
	Mapping gym.Mapping
	// App is the pool application's name (--app), such as app-0001, of
	// the pool of PoolSeed (--pool-seed).
	App      string
	PoolSeed int64
	// Episodes of 100 steps (--episodes; DefaultEpisodes(Algo) when 0).
	Episodes int
	// Seed seeds the agent and the simulation (--seed).
	Seed uint64
	// Step is the simulation step (--step).
	Step time.Duration
	// Traces is the folder of the real traces (--traces).
	Traces string
	// Out is the output folder (--out); the run writes Out/<app>-<algo>.
	Out string
	// Plot is the learning curve's file name (--plot: .png, .svg or .pdf).
	Plot string
	// Verbose prints every episode instead of the bar (--verbose).
	Verbose bool
	// Bar draws progress (none when nil).
	Bar progress.Bar
}

// Validate reports the first bad field, naming its flag.
func (c TrainAppConfig) Validate() error {
	if _, err := generator.AppIndex(c.App); err != nil {
		return fmt.Errorf("--app %w", err)
	}
	if _, err := FindAlgorithm(c.Algo); err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	if c.Episodes < 0 {
		return fmt.Errorf("--episodes %d: must be positive", c.Episodes)
	}
	if err := plot.CheckPath(c.Plot); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// TrainApp trains cfg.Algo on cfg.App (its HPA+VPA baseline tuned as
// `aware run` tunes it), scores the greedy policy and HPA+VPA over 5
// episodes each, prints both to out, and writes episodes.json, the
// learning curve and the agent's checkpoint to cfg.Out/<app>-<algo>.
func TrainApp(ctx context.Context, cfg TrainAppConfig, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	idx, _ := generator.AppIndex(cfg.App)
	if cfg.Episodes == 0 {
		cfg.Episodes = DefaultEpisodes(cfg.Algo)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	all, err := generator.FirstApps(prof, cfg.PoolSeed, idx)
	if err != nil {
		return err
	}
	apps := all[idx-1:]
	simApps, shapes, err := generator.Simulated(apps, cfg.Traces, cfg.Step, cfg.Seed)
	if err != nil {
		return err
	}
	if err := baselines.TuneDefault(ctx, prof, apps[:1], simApps[:1], cfg.Step, cfg.Seed); err != nil {
		return err
	}
	env, err := sim.NewEnv(prof, simApps[0], sim.WithStep(cfg.Step))
	if err != nil {
		return err
	}
	ag, discrete, err := NewAgent(cfg.Algo, gym.StateDim, cfg.Seed)
	if err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	app := apps[0]
	fmt.Fprintf(out, "training %s on %s (%s, SLO %s, load %s) for %d episodes\n", cfg.Algo, cfg.App, segments.FormatChain(app.Spec.Segments), simApps[0].SLO, shapes.Origin[app.Load.Source], cfg.Episodes)
	start := time.Now()
	set, end := cfg.Bar.Start(cfg.Algo, cfg.Episodes)
	eps, err := Run(ctx, env, ag, Config{Episodes: cfg.Episodes, Seed: cfg.Seed, Discrete: discrete, Mapping: cfg.Mapping, Explore: true,
		Progress: func(e Episode) {
			if cfg.Verbose {
				fmt.Fprintf(out, "episode %4d/%d  reward %7.2f  cpu %5.1f%%  mem %5.1f%%  slo violations %3d  refused %3d  updates %d\n",
					e.Index+1, cfg.Episodes, e.Reward, 100*e.CPUUtil, 100*e.MemoryUtil, e.SLOViolations, e.Illegal, e.Updates)
				return
			}
			set(e.Index + 1)
		}})
	if !cfg.Verbose {
		end()
	}
	if err != nil {
		return err
	}
	const scored = 5
	ev, err := Run(ctx, env, ag, Config{Episodes: scored, Seed: EvalSeed(cfg.Seed), Discrete: discrete, Mapping: cfg.Mapping})
	if err != nil {
		return err
	}
	hv, _ := baselines.Find("hpa+vpa")
	base, err := BaselineScore(ctx, env, hv, app.Profile.Targets.CPU, app.MinCPU, cfg.Step, cfg.Seed, scored)
	if err != nil {
		return err
	}
	agentScore := Summarise(ev)
	fmt.Fprintf(out, "greedy policy over %d episodes: reward %.1f, SLO violations %.1f, CPU %.0f%%, memory %.0f%% (HPA+VPA: %.1f, %.1f, %.0f%%, %.0f%%)\n",
		scored, agentScore.Reward, agentScore.SLOViolations, 100*agentScore.CPUUtil, 100*agentScore.MemoryUtil,
		base.Reward, base.SLOViolations, 100*base.CPUUtil, 100*base.MemoryUtil)

	dir := filepath.Join(cfg.Out, cfg.App+"-"+cfg.Algo)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		App      string    `json:"app"`
		Algo     string    `json:"algo"`
		Seed     uint64    `json:"seed"`
		Episodes []Episode `json:"episodes"`
		Greedy   Score     `json:"greedy"`
		Baseline Score     `json:"baseline"`
	}{cfg.App, cfg.Algo, cfg.Seed, eps, agentScore, base}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "episodes.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	y := make([]float64, len(eps))
	for i, e := range eps {
		y[i] = e.Reward
	}
	if err := plot.Save(filepath.Join(dir, cfg.Plot), plot.Curves{
		Title:  fmt.Sprintf("%s on %s (seed %d)", cfg.Algo, cfg.App, cfg.Seed),
		XLabel: "episode", YLabel: "episode reward", Smooth: 20,
		Series: []plot.Series{{Name: cfg.Algo + " (exploring)", Y: y}},
		References: []plot.Reference{
			{Name: "greedy policy", Y: agentScore.Reward},
			{Name: "HPA+VPA", Y: base.Reward},
		},
	}); err != nil {
		return err
	}
	if err := ag.Save(filepath.Join(dir, "agent.ckpt")); err != nil {
		return err
	}
	fmt.Fprintf(out, "done in %s; wrote episodes.json, %s and agent.ckpt to %s\n", time.Since(start).Round(time.Millisecond), cfg.Plot, dir)
	return nil
}
