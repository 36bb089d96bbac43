package validation

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// OverheadChain is the chain MeasureOverheads serves: a light, steady
// segment whose calibrated cost is small next to the HTTP round trip.
var OverheadChain = []segments.Spec{{Name: "matMul", Size: 25}}

// MeasureOverheads measures, on this machine and with the validation's
// placement, what serving a request over HTTP costs beyond its chain
// (sim.Overheads): the workload server runs OverheadChain at one core and
// rate requests/s for window, repeats times; the CPU overhead is the
// server's CPU per request less the chain's calibrated CPU, and the time
// overhead the median latency less the chain's calibrated median and that
// CPU. The load is light (a few per cent of the core), so no request queues.
// Request (bytes) keeps its default. It returns the overheads and the
// median real run.
func MeasureOverheads(ctx context.Context, cfg RealConfig, prof *calibration.Profile, rate float64, window time.Duration, repeats int) (sim.Overheads, Measured, error) {
	ov := sim.DefaultOverheads()
	secs := int(window / time.Second)
	if !(rate > 0) || secs < 1 || repeats < 1 {
		return ov, Measured{}, fmt.Errorf("validation: overheads: rate %g, window %s (at least 1 s) and repeats %d must be positive", rate, window, repeats)
	}
	m, err := sim.NewModel(prof, OverheadChain, 1, sim.Overheads{})
	if err != nil {
		return ov, Measured{}, fmt.Errorf("validation: overheads: %w", err)
	}
	c := Case{App: "overheads", Chain: OverheadChain, CPU: 1, Trace: "constant"}
	for range secs {
		c.Rates = append(c.Rates, rate)
	}
	var runs []Measured
	for range repeats {
		r, _, err := Real(ctx, cfg, c)
		if err != nil {
			return ov, Measured{}, fmt.Errorf("validation: overheads: %w", err)
		}
		runs = append(runs, r)
	}
	real := MedianOf(runs)
	if !(real.Throughput > 0) || !(real.P50 > 0) {
		return ov, real, fmt.Errorf("validation: overheads: the run served %g req/s with median latency %gs", real.Throughput, real.P50)
	}
	ov.CPU = math.Max(real.CPU/real.Throughput-m.CPU, 0)
	ov.Time = math.Max(real.P50-m.P50-ov.CPU, 0)
	return ov, real, nil
}
