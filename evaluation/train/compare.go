package train

import (
	"context"
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Case is one application of a comparison.
type Case struct {
	Name  string // pool name, such as app-0803
	Chain string // segment chain, for the table
	App   sim.App
	// CPUTarget is the baseline HPA's utilisation target (the profile's
	// default when 0).
	CPUTarget float64
	// MinCPU is the baseline MPA's minAllowed CPU (the action space's
	// low bound when below it).
	MinCPU float64
}

// CompareConfig is one agents-versus-baseline study.
type CompareConfig struct {
	Profile *calibration.Profile
	// Step is the simulation step (30 s when 0).
	Step time.Duration
	// Algos are trained on every case (Algos when nil).
	Algos []string
	// Episodes is the training budget of each algorithm, in 100-step
	// episodes (DefaultEpisodes for algorithms it does not name).
	Episodes map[string]int
	// EvalEpisodes greedy episodes score each trained agent, and as many
	// episodes score the baseline after as many again of warm-up (5 when 0).
	EvalEpisodes int
	// Seed seeds agents (Seed) and environments (training episodes Seed+i,
	// scored episodes EvalSeed(Seed)+i).
	Seed uint64
	// Baseline is the reference autoscaler (HPA+VPA when its New is nil).
	Baseline baselines.Factory
	// Mapping turns the continuous agents' actions into allocations.
	Mapping gym.Mapping
	// Workers run cases in parallel (1 when ≤ 0).
	Workers int
	// Progress is called after each (case, algorithm), from any worker.
	Progress func(Result)
}

// EvalSeed is the first environment seed of scored episodes for seed.
func EvalSeed(seed uint64) uint64 { return seed + 1_000_000 }

// Score is the mean of a policy's scored episodes.
type Score struct {
	Reward        float64 `json:"reward"`
	SLOViolations float64 `json:"sloViolations"`
	CPUUtil       float64 `json:"cpuUtil"`
	MemoryUtil    float64 `json:"memoryUtil"`
	Illegal       float64 `json:"illegal"`
	Replicas      float64 `json:"replicas"`
	CPU           float64 `json:"cpu"`
	Memory        float64 `json:"memory"`
}

// Summarise returns the mean of eps.
func Summarise(eps []Episode) Score {
	var s Score
	for _, e := range eps {
		s.Reward += e.Reward
		s.SLOViolations += float64(e.SLOViolations)
		s.CPUUtil += e.CPUUtil
		s.MemoryUtil += e.MemoryUtil
		s.Illegal += float64(e.Illegal)
		s.Replicas += e.Replicas
		s.CPU += e.CPU
		s.Memory += e.Memory
	}
	if n := float64(len(eps)); n > 0 {
		s.Reward /= n
		s.SLOViolations /= n
		s.CPUUtil /= n
		s.MemoryUtil /= n
		s.Illegal /= n
		s.Replicas /= n
		s.CPU /= n
		s.Memory /= n
	}
	return s
}

// Result is one algorithm on one case.
type Result struct {
	App      string `json:"app"`
	Chain    string `json:"chain"`
	SLO      string `json:"slo"`
	Algo     string `json:"algo"`
	Episodes int    `json:"episodes"`
	Agent    Score  `json:"agent"`
	Baseline Score  `json:"baseline"`
	// Wins is Agent.Reward ≥ Baseline.Reward with no more SLO violations.
	Wins bool `json:"wins"`
	// Curve is the reward of every training episode.
	Curve   []float64 `json:"curve"`
	Seconds float64   `json:"seconds"`
}

// Compare trains every algorithm on every case, scores its greedy policy on
// the case's trace window and scores the baseline on the same window with
// the same environment seeds. Results come in case order, then algorithm
// order.
func Compare(ctx context.Context, cases []Case, cfg CompareConfig) ([]Result, error) {
	if cfg.Profile == nil {
		return nil, fmt.Errorf("train: compare: no calibration profile")
	}
	if cfg.Step <= 0 {
		cfg.Step = 30 * time.Second
	}
	if cfg.Algos == nil {
		cfg.Algos = Algos()
	}
	if cfg.EvalEpisodes <= 0 {
		cfg.EvalEpisodes = 5
	}
	if cfg.Baseline.New == nil {
		cfg.Baseline, _ = baselines.Find("hpa+vpa")
	}
	for _, algo := range cfg.Algos {
		if _, _, err := NewAgent(algo, gym.StateDim, cfg.Seed); err != nil {
			return nil, fmt.Errorf("train: compare: %w", err)
		}
		if n, ok := cfg.Episodes[algo]; ok && n < 1 {
			return nil, fmt.Errorf("train: compare: %s: %d training episodes", algo, n)
		}
	}
	out := make([]Result, len(cases)*len(cfg.Algos))
	err := Each(ctx, len(cases), cfg.Workers, func(i int) error {
		res, err := compareCase(ctx, cases[i], cfg)
		if err != nil {
			return fmt.Errorf("train: compare %s: %w", cases[i].Name, err)
		}
		copy(out[i*len(cfg.Algos):], res)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func compareCase(ctx context.Context, c Case, cfg CompareConfig) ([]Result, error) {
	env, err := sim.NewEnv(cfg.Profile, c.App, sim.WithStep(cfg.Step))
	if err != nil {
		return nil, err
	}
	base, err := BaselineScore(ctx, env, cfg.Baseline, c.CPUTarget, c.MinCPU, cfg.Step, cfg.Seed, cfg.EvalEpisodes)
	if err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(cfg.Algos))
	for _, algo := range cfg.Algos {
		start := time.Now()
		n, ok := cfg.Episodes[algo]
		if !ok {
			n = DefaultEpisodes(algo)
		}
		ag, discrete, err := NewAgent(algo, gym.StateDim, cfg.Seed)
		if err != nil {
			return nil, err
		}
		tr, err := Run(ctx, env, ag, Config{Episodes: n, Seed: cfg.Seed, Discrete: discrete, Mapping: cfg.Mapping, Explore: true})
		if err != nil {
			return nil, fmt.Errorf("%s: training: %w", algo, err)
		}
		ev, err := Run(ctx, env, ag, Config{Episodes: cfg.EvalEpisodes, Seed: EvalSeed(cfg.Seed), Discrete: discrete, Mapping: cfg.Mapping})
		if err != nil {
			return nil, fmt.Errorf("%s: evaluation: %w", algo, err)
		}
		r := Result{
			App: c.Name, Chain: c.Chain, SLO: c.App.SLO.String(), Algo: algo, Episodes: n,
			Agent: Summarise(ev), Baseline: base, Curve: make([]float64, len(tr)),
		}
		for i, e := range tr {
			r.Curve[i] = e.Reward
		}
		r.Wins = r.Agent.Reward >= r.Baseline.Reward && r.Agent.SLOViolations <= r.Baseline.SLOViolations
		r.Seconds = time.Since(start).Seconds()
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
		res = append(res, r)
	}
	return res, nil
}

// BaselineScore scores f's autoscaler on env, with HPA target cpuTarget
// and CPU floor minCPU: warm-up episodes first (the recommender keeps its
// history), then n scored episodes reset with EvalSeed(seed)+i, the seeds
// agents are scored with.
func BaselineScore(ctx context.Context, env gym.Env, f baselines.Factory, cpuTarget, minCPU float64, step time.Duration, seed uint64, n int) (Score, error) {
	if cpuTarget <= 0 {
		cpuTarget = v1alpha1.DefaultCPUTarget
	}
	rec, err := f.NewFor(env.ActionSpace(), minCPU, step, cpuTarget)
	if err != nil {
		return Score{}, fmt.Errorf("baseline %s: %w", f.Name, err)
	}
	eps, err := Recommend(ctx, env, rec, step, Config{Episodes: 2 * n, Seed: EvalSeed(seed) - uint64(n)})
	if err != nil {
		return Score{}, fmt.Errorf("baseline %s: %w", f.Name, err)
	}
	return Summarise(eps[n:]), nil
}
