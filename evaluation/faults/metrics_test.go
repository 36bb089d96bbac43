package faults

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

func TestCorrupterSpoilsChosenPodsOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	mem := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "container_memory_working_set_bytes"}, []string{"pod", "container"})
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "container_cpu_usage_seconds_total"}, []string{"pod", "container"})
	ready := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kube_pod_status_ready"}, []string{"pod"})
	reg.MustRegister(mem, cpu, ready)
	pods := []string{"a", "b", "c", "d", "ok"}
	for _, p := range pods {
		mem.WithLabelValues(p, "app").Set(100)
		cpu.WithLabelValues(p, "app").Add(5)
		ready.WithLabelValues(p).Set(1)
	}
	c := &corrupter{inner: reg}
	values := func() map[string]map[string]float64 {
		mfs, err := c.Gather()
		require.NoError(t, err)
		out := map[string]map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				if out[podLabel(m)] == nil {
					out[podLabel(m)] = map[string]float64{}
				}
				v := m.GetGauge().GetValue()
				if mf.GetType() == dto.MetricType_COUNTER {
					v = m.GetCounter().GetValue()
				}
				out[podLabel(m)][mf.GetName()] = v
			}
		}
		return out
	}
	before := values()
	require.Len(t, before, 5)

	c.set(map[string]string{"a": "nan", "b": "inf", "c": "negative", "d": "missing"})
	got := values()
	assert.True(t, math.IsNaN(got["a"]["container_memory_working_set_bytes"]))
	assert.Equal(t, 5.0, got["a"]["container_cpu_usage_seconds_total"])
	assert.True(t, math.IsInf(got["b"]["container_cpu_usage_seconds_total"], 1))
	assert.Equal(t, 100.0, got["b"]["container_memory_working_set_bytes"])
	assert.Equal(t, -101.0, got["c"]["container_memory_working_set_bytes"])
	assert.NotContains(t, got, "d", "every series of a missing pod is gone")
	assert.Equal(t, before["ok"], got["ok"])
	assert.Equal(t, 1.0, got["a"]["kube_pod_status_ready"])

	c.set(nil)
	assert.Equal(t, before, values())
}

func TestHeldSteps(t *testing.T) {
	step := 5 * time.Second
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	iv := [2]time.Time{t0.Add(2 * time.Second), t0.Add(32 * time.Second)} // rounds 10..30 lie inside
	at := func(s int) trajectory.Step {
		return trajectory.Step{Time: t0.Add(time.Duration(s)*time.Second + 300*time.Millisecond)}
	}
	held := []string{"ns/bad"}
	steps := map[string][]trajectory.Step{
		"ns/bad":  {at(5), at(35)},         // the rounds at 5 and 35 straddle the interval: allowed
		"ns/good": {at(5), at(20), at(35)}, // stepped inside
		"ns/idle": {at(0), at(35)},         // did not
	}
	wrong, stalled := heldSteps(steps, held, iv, []string{"ns/bad", "ns/good", "ns/idle"}, step)
	assert.Zero(t, wrong)
	assert.Equal(t, []string{"ns/idle"}, stalled)

	steps["ns/bad"] = append(steps["ns/bad"], at(10), at(30))
	wrong, _ = heldSteps(steps, held, iv, []string{"ns/bad", "ns/good", "ns/idle"}, step)
	assert.Equal(t, 2, wrong, "steps of rounds 10 and 30, whose windows lie inside")

	_, stalled = heldSteps(steps, held, [2]time.Time{t0, t0.Add(9 * time.Second)}, []string{"ns/bad", "ns/idle"}, step)
	assert.Empty(t, stalled, "an interval shorter than two steps asks nothing of the others")
}
