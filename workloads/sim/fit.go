package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Fitted is a per-application simulator model estimated from recorded
// steps (what Prometheus reported while the fallback acted): the route by
// which an on-policy agent such as PPO bootstraps, training in a
// simulation of the application before it acts on it (issue 16, §3).
type Fitted struct {
	// Model is the application's per-request model, as the simulator uses
	// it (App.Model).
	Model Model `json:"model"`
	// IdleCPU is what a pod burns idle, in cores (WithIdleCPU).
	IdleCPU float64 `json:"idleCPU"`
	// Noise is the relative spread of the measurements around the fitted
	// CPU model (App.Noise).
	Noise float64 `json:"noise"`
	// Concurrency is the server's bound on requests running in a pod
	// (0: unbounded), as given to Fit.
	Concurrency int `json:"concurrency"`
	// CPURows, MemoryRows and LatencyRows are how many steps each part
	// of the model was fitted on.
	CPURows, MemoryRows, LatencyRows int
}

// Least usable steps per part of the fit.
const (
	minCPURows     = 8
	minMemoryRows  = 8
	minLatencyRows = 8
)

// Fit estimates an application's simulator model from steps, the metrics of
// consecutive recorded steps, on a server running at most concurrency
// requests per pod (0: unbounded), with steps of dt:
//   - CPU-seconds per request and idle cores per pod by least squares of
//     the CPU usage on completed requests and serving pods, relative
//     errors, over steps whose usage stays below their quota;
//   - the base working set and the working set per concurrent request by
//     least squares of per-pod memory on requests in flight (Little's
//     law with the median latency), over steps without OOM kills or a
//     working set at its limit;
//   - the isolated service-time quantiles and spread by minimising the
//     squared log error of the simulator's own steady-state p50, p95 and
//     p99 (SteadyState) against the measured ones, over steps that
//     kept up with their load (Nelder–Mead);
//   - disk and network bytes per request as ratios of the totals.
//
// A part without enough usable steps is an error naming it.
func Fit(steps []gym.Metrics, concurrency int, dt time.Duration) (Fitted, error) {
	if concurrency < 0 {
		return Fitted{}, fmt.Errorf("sim: fit: concurrency %d must not be negative", concurrency)
	}
	if dt <= 0 {
		return Fitted{}, fmt.Errorf("sim: fit: step %s must be positive", dt)
	}
	f := Fitted{Concurrency: concurrency}
	if err := f.fitCPU(steps); err != nil {
		return Fitted{}, err
	}
	if err := f.fitMemory(steps); err != nil {
		return Fitted{}, err
	}
	if err := f.fitLatency(steps, dt.Seconds()); err != nil {
		return Fitted{}, err
	}
	var io, net, done float64
	for _, m := range steps {
		if finiteMetrics(m) {
			io += m.IORate
			net += m.NetRate
			done += m.ProcessedRate
		}
	}
	if done > 0 {
		f.Model.IOBytes, f.Model.NetBytes = io/done, net/done
	}
	if err := f.Model.Validate(); err != nil {
		return Fitted{}, fmt.Errorf("sim: fit: %w", err)
	}
	return f, nil
}

// finiteMetrics reports whether every field of m is a finite number.
func finiteMetrics(m gym.Metrics) bool {
	for _, v := range []float64{m.CPULimit, m.MemoryLimit, m.CPUUsage, m.MemoryUsage, m.MemoryPeak, m.IORate, m.NetRate,
		m.ArrivalRate, m.ProcessedRate, m.DroppedRate, m.LatencyP50, m.LatencyP95, m.LatencyP99} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// settled reports whether every desired pod served the whole step, without
// kills: the steps whose usage the pod count explains.
func settled(m gym.Metrics) bool {
	return finiteMetrics(m) && m.Replicas > 0 && m.ReadyReplicas == m.Replicas && m.OOMKills == 0 && m.CPULimit > 0 && m.MemoryLimit > 0
}

// cpuRow reports whether m can fit the CPU model: settled, with traffic,
// and usage below 90 % of the quota (a throttled pod's usage is its quota,
// not its demand).
func cpuRow(m gym.Metrics) bool {
	return settled(m) && m.ProcessedRate > 0 && m.CPUUsage > 0 && m.CPUUsage < 0.9*float64(m.ReadyReplicas)*m.CPULimit
}

// predictCPU is the CPU usage f predicts for m's completed requests and pods.
func (f *Fitted) predictCPU(m gym.Metrics) float64 {
	return m.ProcessedRate*f.Model.CPU + float64(m.ReadyReplicas)*f.IdleCPU
}

func (f *Fitted) fitCPU(steps []gym.Metrics) error {
	// Weighted least squares of u = a·x + b·p with weights 1/u² (relative
	// errors: loads span orders of magnitude), b ≥ 0.
	var sxx, sxp, spp, sxu, spu float64
	n := 0
	for _, m := range steps {
		if !cpuRow(m) {
			continue
		}
		w := 1 / (m.CPUUsage * m.CPUUsage)
		x, p, u := m.ProcessedRate, float64(m.ReadyReplicas), m.CPUUsage
		sxx += w * x * x
		sxp += w * x * p
		spp += w * p * p
		sxu += w * x * u
		spu += w * p * u
		n++
	}
	if n < minCPURows {
		return fmt.Errorf("sim: fit: cpu: %d steps with traffic, all pods ready and usage below 90 %% of the quota; need at least %d", n, minCPURows)
	}
	a, b := 0.0, 0.0
	if det := sxx*spp - sxp*sxp; det > 1e-12*sxx*spp {
		a, b = (sxu*spp-spu*sxp)/det, (sxx*spu-sxp*sxu)/det
	}
	if !(b >= 0) || !(a > 0) {
		a, b = sxu/sxx, 0
	}
	if !(a > 0) {
		return fmt.Errorf("sim: fit: cpu: %d steps give no positive CPU per request (%g)", n, a)
	}
	f.Model.CPU, f.IdleCPU, f.CPURows = a, b, n
	var s2 float64
	for _, m := range steps {
		if cpuRow(m) {
			e := m.CPUUsage/f.predictCPU(m) - 1
			s2 += e * e
		}
	}
	f.Noise = math.Min(math.Sqrt(s2/float64(n)), 0.5)
	return nil
}

// memoryRow reports whether m can fit the memory model: settled, and the
// peak working set below 98 % of the limit (the usage of a pod at its
// limit is the limit).
func memoryRow(m gym.Metrics) bool {
	return settled(m) && m.MemoryUsage > 0 && m.MemoryPeak < 0.98*m.MemoryLimit && (m.ProcessedRate == 0 || m.LatencyP50 > 0)
}

// inFlight is the requests in one pod during m (Little's law with the
// median latency standing for the mean).
func inFlight(m gym.Metrics) float64 {
	return m.ProcessedRate / float64(m.ReadyReplicas) * m.LatencyP50
}

func (f *Fitted) fitMemory(steps []gym.Metrics) error {
	k := math.Inf(1)
	if f.Concurrency > 0 {
		k = float64(f.Concurrency)
	}
	// y = B + M·x with x the running requests beyond the first, y the
	// per-pod usage less what queued requests hold; weights 1/y².
	type row struct{ x, y, w float64 }
	var rows []row
	for _, m := range steps {
		if !memoryRow(m) {
			continue
		}
		n := inFlight(m)
		run := math.Min(n, k)
		y := m.MemoryUsage/float64(m.ReadyReplicas) - RequestBytes*math.Max(n-run, 0)
		if y > 0 {
			rows = append(rows, row{math.Max(run-1, 0), y, 1 / (y * y)})
		}
	}
	if len(rows) < minMemoryRows {
		return fmt.Errorf("sim: fit: memory: %d steps with all pods ready, no OOM kill and the working set below its limit; need at least %d", len(rows), minMemoryRows)
	}
	var sw, sx, sy, sxx, sxy float64
	for _, r := range rows {
		sw += r.w
		sx += r.w * r.x
		sy += r.w * r.y
		sxx += r.w * r.x * r.x
		sxy += r.w * r.x * r.y
	}
	slope := 0.0
	if v := sxx*sw - sx*sx; v > 1e-12*sxx*sw {
		slope = (sxy*sw - sx*sy) / v
	}
	// A concurrent request holds at least its goroutines and buffers; the
	// slope is not identified when the pods rarely held more than one.
	slope = math.Max(slope, RequestBytes)
	base := (sy - slope*sx) / sw
	if !(base > 0) {
		return fmt.Errorf("sim: fit: memory: %d steps give a base working set of %g bytes", len(rows), base)
	}
	f.Model.BaseMemory, f.Model.MemoryPerRequest, f.MemoryRows = base, slope, len(rows)
	return nil
}

// latencyRow reports whether m can fit the latency model: settled, with
// traffic and every latency quantile measured, and its completions within
// 1 % of its arrivals without drops (no backlog built or drained, whose
// wait the steady state does not have).
func latencyRow(m gym.Metrics) bool {
	return settled(m) && m.ProcessedRate > 0 && m.DroppedRate == 0 && math.Abs(m.ProcessedRate-m.ArrivalRate) <= 0.01*m.ArrivalRate &&
		m.LatencyP50 > 0 && m.LatencyP95 > 0 && m.LatencyP99 > 0
}

// withQuantiles is m with median service time cpu+wait, p95 excess ex
// and p99 excess scaled as a normal's, and squared spread cv2: the
// structure NewModel derives from a calibration profile.
func withQuantiles(m Model, wait, ex, cv2 float64) Model {
	m.Wait = wait
	m.P50 = m.CPU + wait
	m.P95 = m.P50 + ex
	m.P99 = m.P50 + ex*2.326/1.645
	m.CV2 = cv2
	return m
}

// steady is what the simulator reports of m's allocation and load under
// model.
func (f *Fitted) steady(model Model, m gym.Metrics, dt float64) Steady {
	return SteadyState(model, Allocation{Replicas: m.ReadyReplicas, CPU: m.CPULimit, Memory: m.MemoryLimit}, m.ProcessedRate, f.Concurrency, dt)
}

func (f *Fitted) fitLatency(steps []gym.Metrics, dt float64) error {
	var rows []gym.Metrics
	var p50s, ex []float64
	for _, m := range steps {
		if latencyRow(m) {
			rows = append(rows, m)
			p50s = append(p50s, m.LatencyP50)
			ex = append(ex, math.Max(m.LatencyP95-m.LatencyP50, 1e-6))
		}
	}
	if len(rows) < minLatencyRows {
		return fmt.Errorf("sim: fit: latency: %d steps with all pods ready that kept up with their load and measured every quantile; need at least %d", len(rows), minLatencyRows)
	}
	// The penalty of a step the model says cannot keep up: as if the
	// prediction were e^4 ≈ 55 times off at every quantile.
	const unstable = 3 * 16
	loss := func(x []float64) float64 {
		model := withQuantiles(f.Model, math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[2]))
		s := 0.0
		for _, m := range rows {
			st := f.steady(model, m, dt)
			if !st.Stable() {
				s += unstable
				continue
			}
			for _, q := range [][2]float64{{st.LatencyP50, m.LatencyP50}, {st.LatencyP95, m.LatencyP95}, {st.LatencyP99, m.LatencyP99}} {
				d := math.Log(q[0] / q[1])
				s += d * d
			}
		}
		return s / float64(len(rows))
	}
	slices.Sort(p50s)
	slices.Sort(ex)
	x0 := []float64{
		math.Log(math.Max(p50s[0]-f.Model.CPU, 1e-6)),
		math.Log(ex[len(ex)/4]),
		math.Log(0.5),
	}
	res, err := optimize.Minimize(optimize.Problem{Func: loss}, x0, &optimize.Settings{FuncEvaluations: 3000}, &optimize.NelderMead{})
	if err != nil && res == nil {
		return fmt.Errorf("sim: fit: latency: %w", err)
	}
	x := res.X
	if math.IsNaN(res.F) || math.IsInf(res.F, 0) {
		return errors.New("sim: fit: latency: the squared log error is not finite at the optimum")
	}
	f.Model = withQuantiles(f.Model, math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[2]))
	f.LatencyRows = len(rows)
	return nil
}

// FitError is how far a fitted model's predictions are from measured
// steps: the median absolute relative error of each quantity, over the
// steps usable for it (their number beside).
type FitError struct {
	CPU         float64 `json:"cpu"`
	Memory      float64 `json:"memory"`
	LatencyP50  float64 `json:"latencyP50"`
	LatencyP95  float64 `json:"latencyP95"`
	LatencyP99  float64 `json:"latencyP99"`
	CPURows     int     `json:"cpuRows"`
	MemoryRows  int     `json:"memoryRows"`
	LatencyRows int     `json:"latencyRows"`
}

// Error measures f against steps it was not fitted on (held back): CPU
// usage, a pod's mean working set and the latency quantiles, each as the
// median of |predicted/measured − 1|; NaN where no step is usable.
func (f Fitted) Error(steps []gym.Metrics, dt time.Duration) FitError {
	var cpu, mem, p50, p95, p99 []float64
	// The empirical median (the lower middle value of an even count; NaN
	// when no step is usable; an unstable prediction's +Inf sorts last).
	med := func(x []float64) float64 { return quantile.NearestRank(x, 0.5) }
	rel := func(pred, meas float64) float64 { return math.Abs(pred/meas - 1) }
	for _, m := range steps {
		if cpuRow(m) {
			cpu = append(cpu, rel(f.predictCPU(m), m.CPUUsage))
		}
		if memoryRow(m) {
			pred := f.Model.WorkingSet(inFlight(m), f.Concurrency)
			mem = append(mem, rel(pred, m.MemoryUsage/float64(m.ReadyReplicas)))
		}
		if latencyRow(m) {
			st := f.steady(f.Model, m, dt.Seconds())
			p50 = append(p50, rel(st.LatencyP50, m.LatencyP50))
			p95 = append(p95, rel(st.LatencyP95, m.LatencyP95))
			p99 = append(p99, rel(st.LatencyP99, m.LatencyP99))
		}
	}
	return FitError{
		CPU: med(cpu), Memory: med(mem), LatencyP50: med(p50), LatencyP95: med(p95), LatencyP99: med(p99),
		CPURows: len(cpu), MemoryRows: len(mem), LatencyRows: len(p50),
	}
}

// App is the simulated application f stands for: load replaying arrivals
// (requests/s per step, in order, wrapping around), starting at initial,
// judged by slo.
func (f Fitted) App(name string, slo gym.SLO, arrivals []float64, initial Allocation) (App, error) {
	mean := 0.0
	for i, a := range arrivals {
		if !(a >= 0) || math.IsInf(a, 1) {
			return App{}, fmt.Errorf("sim: fitted app %s: arrival rate %g at step %d is not a finite rate", name, a, i)
		}
		mean += a / float64(len(arrivals))
	}
	if !(mean > 0) {
		return App{}, fmt.Errorf("sim: fitted app %s: the %d recorded steps had no load", name, len(arrivals))
	}
	shape := make([]float64, len(arrivals))
	for i, a := range arrivals {
		shape[i] = a / mean
	}
	model := f.Model
	a := App{
		Name: name, Speed: 1, Noise: f.Noise, SLO: slo, Concurrency: f.Concurrency,
		Load: Load{Shape: shape, Scale: mean}, Initial: initial, Model: &model,
	}
	if err := a.Validate(); err != nil {
		return App{}, fmt.Errorf("sim: fitted app: %w", err)
	}
	return a, nil
}

// Options are the simulator options f's App needs besides the caller's.
func (f Fitted) Options() []Option { return []Option{WithIdleCPU(f.IdleCPU)} }
