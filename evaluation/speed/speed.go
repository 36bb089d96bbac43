package speed

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/gym"
)

// FIRM's published per-operation times (digest §2).
const (
	FIRMUpdate    = 73 * time.Millisecond
	FIRMInference = 1200 * time.Microsecond
)

// Row is one measurement.
type Row struct {
	Name     string
	PerOp    time.Duration
	AllocsOp int64
	// Target is the bound (0 when it sets none); FIRM is FIRM's
	// published time for the same operation (0 when none).
	Target, FIRM time.Duration
}

// Case is one measured operation; Setup builds its state and returns the
// function timed per iteration.
type Case struct {
	Name         string
	Target, FIRM time.Duration
	Setup        func() (func(), error)
}

// Cases are the library's measurements, in table order.
func Cases() []Case {
	return []Case{
		{"DDPG update, minibatch 64 (FIRM 40-40 nets)", 200 * time.Microsecond, FIRMUpdate, ddpgUpdate},
		{"DDPG inference, one state", 5 * time.Microsecond, FIRMInference, ddpgAct},
		{"PPO 100-step rollout + update (5 epochs, minibatch 64, 7 moves)", 0, 0, ppoUpdate},
		{"BiGRU 2×256, 20×100 steps, forward", 100 * time.Millisecond, 0, biGRU(false)},
		{"BiGRU 2×256, 20×100 steps, forward+backward", 0, 0, biGRU(true)},
	}
}

// Measure runs every case with testing.Benchmark, after one untimed call.
func Measure(cases []Case) ([]Row, error) {
	rows := make([]Row, 0, len(cases))
	for _, c := range cases {
		op, err := c.Setup()
		if err != nil {
			return nil, fmt.Errorf("speed: %s: %w", c.Name, err)
		}
		// One untimed call sizes the workspaces, as in steady use; without it
		// the first call's allocation and page faults land in a mean of only
		// about ten BiGRU passes and move it by up to 30 %.
		op()
		runtime.GC()
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
		})
		if r.N == 0 {
			return nil, fmt.Errorf("speed: %s: the benchmark did not run", c.Name)
		}
		rows = append(rows, Row{Name: c.Name, PerOp: time.Duration(r.NsPerOp()), AllocsOp: r.AllocsPerOp(), Target: c.Target, FIRM: c.FIRM})
	}
	return rows, nil
}

// WriteTable writes rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) error {
	if _, err := fmt.Fprintln(w, "| operation | time | allocs/op | target | met | FIRM (published) | faster than FIRM |\n|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rows {
		target, met, firm, ratio := "–", "–", "–", "–"
		if r.Target > 0 {
			target = "≤ " + r.Target.String()
			met = "yes"
			if r.PerOp > r.Target {
				met = fmt.Sprintf("no (%.1f× over)", float64(r.PerOp)/float64(r.Target))
			}
		}
		if r.FIRM > 0 {
			firm = r.FIRM.String()
			ratio = fmt.Sprintf("%.0f×", float64(r.FIRM)/float64(r.PerOp))
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s |\n", r.Name, round(r.PerOp), r.AllocsOp, target, met, firm, ratio); err != nil {
			return err
		}
	}
	return nil
}

func round(d time.Duration) time.Duration {
	switch { // three significant digits
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}

func newFIRM() (*ddpg.Agent, error) {
	rnd := rand.New(rand.NewPCG(1, 1))
	ag, err := ddpg.New(gym.StateDim, gym.ActDim, rnd)
	if err != nil {
		return nil, err
	}
	s, n, a := make([]float64, gym.StateDim), make([]float64, gym.StateDim), make([]float64, gym.ActDim)
	for range 10_000 {
		for i := range s {
			s[i], n[i] = rnd.Float64(), rnd.Float64()
		}
		for i := range a {
			a[i] = 2*rnd.Float64() - 1
		}
		ag.Observe(agent.Transition{State: s, Action: a, Reward: rnd.Float64(), Next: n})
	}
	return ag, nil
}

func ddpgUpdate() (func(), error) {
	ag, err := newFIRM()
	if err != nil {
		return nil, err
	}
	return func() {
		if _, err := ag.Update(); err != nil {
			panic(err)
		}
	}, nil
}

func ddpgAct() (func(), error) {
	ag, err := newFIRM()
	if err != nil {
		return nil, err
	}
	s, dst := make([]float64, gym.StateDim), make([]float64, gym.ActDim)
	for i := range s {
		s[i] = 0.1 * float64(i)
	}
	return func() { ag.Act(dst, s, false) }, nil
}

func ppoUpdate() (func(), error) {
	rnd := rand.New(rand.NewPCG(2, 2))
	ag, err := ppo.NewDiscrete(gym.StateDim, int(gym.Moves), rnd)
	if err != nil {
		return nil, err
	}
	s, act := make([]float64, gym.StateDim), make([]float64, gym.Moves)
	cfg := ag.Config()
	return func() {
		for range cfg.RolloutLen {
			for i := range s {
				s[i] = rnd.Float64()
			}
			ag.Act(act, s, true)
			ag.Observe(agent.Transition{State: s, Action: act, Reward: rnd.Float64(), Next: s})
		}
		if _, err := ag.Update(); err != nil {
			panic(err)
		}
	}, nil
}

func biGRU(backward bool) func() (func(), error) {
	return func() (func(), error) {
		const B, T, F, H = 20, 100, 13, 256
		rnd := rand.New(rand.NewPCG(3, 3))
		m, err := rl.NewBiGRU(rl.BiGRUConfig{In: F, Hidden: H, Layers: 2}, rnd)
		if err != nil {
			return nil, err
		}
		x, y, dy := make([]float64, B*T*F), make([]float64, B*T*2*H), make([]float64, B*T*2*H)
		for i := range x {
			x[i] = rnd.NormFloat64()
		}
		for i := range dy {
			dy[i] = rnd.NormFloat64()
		}
		return func() {
			m.Forward(y, x, B, T)
			if backward {
				m.Backward(nil, dy, B, T)
			}
		}, nil
	}
}
