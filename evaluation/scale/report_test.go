package scale

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// sampleResult is a fixed result: one round over its target, everything
// else met.
func sampleResult() Result {
	T := time.Date(2025, 1, 1, 12, 0, 15, 0, time.UTC)
	return Result{
		Apps: 1000, Nodes: 36, Pods: 1012, Pending: 2, Resizing: 3, WithMetrics: 999, Step: 15 * time.Second,
		Setup: Setup{Cluster: 9870 * time.Millisecond, Objects: 21340 * time.Millisecond, Pods: 76020 * time.Millisecond, Warmup: 47500 * time.Millisecond,
			Allowance: 8 * time.Minute, Ready: 1000},
		WithoutMetrics: []string{"app-0007: False MetricsUnavailable: holding the last decision: telemetry: no data"},
		Rounds: []Round{
			{Start: T, Steps: 1000, Want: 1000, Complete: true, Reported: true, Duration: 3210 * time.Millisecond, Written: 412, Unchanged: 588},
			{Start: T.Add(15 * time.Second), Steps: 990, Want: 1000, Reported: true, Duration: 29900 * time.Millisecond, Written: 240, Unchanged: 750},
			{Start: T.Add(30 * time.Second), Want: 1000},
		},
		Window: 30*time.Second + 200*time.Millisecond, CPU: 0.2134, CPUPeak: 0.98,
		HostCPU: 1.83, HostCores: 2,
		Processes: []ProcessCPU{{"kube-apiserver", 0.61}, {"bench (twin, watch)", 0.45}, {"controller", 0.2134}},
		Pressure:  &Pressure{CPU: 0.843, IO: 0.004},
		RSSMax:    83 << 20, HWM: 91 << 20, LiveHeap: 41 << 20,
		Errors:      map[string]float64{},
		ErrorsTotal: map[string]float64{"observe": 1000},
		Steps:       1990, StepMean: 12345 * time.Microsecond,
		Phases:     map[string]time.Duration{"status": 7 * time.Millisecond, "observe": 4321 * time.Microsecond, "record": 120 * time.Microsecond},
		Actuations: map[string]float64{"replicas": 120, "resize": 310}, Decisions: 400, DelayMean: 850 * time.Millisecond,
		Requests:  map[string]float64{"GET": 3980, "PATCH": 1990},
		Snapshots: Snapshots{Taken: 2, Late: 1, Mean: 410 * time.Millisecond},
		APIWrites: map[string]float64{"multidimpodautoscalers/status PATCH": 1990, "events POST": 430, "pods/resize PATCH": 310, "pods/status PATCH": 310},
		Targets:   DefaultTargets(),
	}
}

func TestWriteTableGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, sampleResult()))
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), b.String())
}

// sampleAgentsResult is sampleResult with agents: acting within its
// target, the memory of both processes over it.
func sampleAgentsResult() Result {
	r := sampleResult()
	r.Rounds = r.Rounds[:1]
	r.Processes = append(r.Processes, ProcessCPU{"agent runner", 0.42})
	r.Agents = &AgentsResult{
		Snapshots: Snapshots{Taken: 2, Failed: 1, Mean: 1200 * time.Millisecond},
		Window:    30 * time.Second, Hosted: 1000, CPU: 0.42, CPUPeak: 1.2, Training: 0.3, Acting: 0.12,
		RSSMax: 900 << 20, HWM: 950 << 20, LiveHeap: 390 << 20,
		Steps: map[string]float64{"Online": 2000}, Updates: map[string]float64{"Online": 1990}, UpdatesPerSecond: 66.3,
		Withheld: map[string]float64{}, Episodes: 500,
	}
	r.Events = map[string]float64{"aware-controller ResizedInPlace": 310, "default-scheduler FailedScheduling": 2400, "deployment-controller ScalingReplicaSet": 120}
	return r
}

func TestWriteTableAgentsGolden(t *testing.T) {
	var b bytes.Buffer
	r := sampleAgentsResult()
	require.NoError(t, WriteTable(&b, r))
	golden := filepath.Join("testdata", "table-agents.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), b.String())
	assert.Equal(t, []string{"controller + agent runner RSS peak (VmHWM): 1041.0 MiB, target ≤ 1024.0 MiB"}, r.Missed())

	r.Agents.Acting, r.Agents.Errors, r.Agents.HWM = 0.6, 2, 100<<20
	assert.Equal(t, []string{"agent runner CPU acting (besides training), average: 0.600 cores, target ≤ 0.5 core",
		"agent runner failed cycles in the window: 2, target 0"}, r.Missed())
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*Result)
		missed []string
	}{
		{name: "all met", edit: func(r *Result) { r.Rounds = r.Rounds[:1] }},
		{name: "an incomplete round and one not reported", edit: func(*Result) {},
			missed: []string{"round 2 (T=12:00:30), last MPA: incomplete: 10 MPAs missed it; 29.9s (990/1000 MPA steps; status written 240, unchanged 750), target ≤ 15s",
				"round 3 (T=12:00:45), last MPA: not reported (the controller finished no later round in time), target ≤ 15s"}},
		{name: "a complete round over its target", edit: func(r *Result) {
			r.Rounds = r.Rounds[:1]
			r.Rounds[0].Duration = 15*time.Second + time.Millisecond
		}, missed: []string{"round 1 (T=12:00:15), last MPA: 15s (1000/1000 MPA steps; status written 412, unchanged 588), target ≤ 15s"}},
		{name: "a warm-up out of its allowance", edit: func(r *Result) {
			r.Rounds = r.Rounds[:1]
			r.Setup.Warmup, r.Setup.Ready = 8*time.Minute+500*time.Millisecond, 987
		}, missed: []string{"warm-up: MPAs with a recommendation on fresh metrics: 987/1000 after 8m0.5s, target 1000/1000 within 8m0s"}},
		{name: "no rounds", edit: func(r *Result) { r.Rounds = nil }, missed: []string{"rounds: none measured, target ≤ 15s"}},
		{name: "CPU, RSS and errors", edit: func(r *Result) {
			r.Rounds = r.Rounds[:1]
			r.CPU, r.RSSMax, r.HWM = 1.5, 600<<20, 700<<20
			r.Errors = map[string]float64{"status": 2, "observe": 1}
		}, missed: []string{
			"controller CPU, average over 30.2s: 1.500 cores, target ≤ 1 core",
			"controller RSS, max sampled every 1s: 600.0 MiB, target ≤ 512.0 MiB",
			"controller RSS peak (VmHWM): 700.0 MiB, target ≤ 512.0 MiB",
			"controller errors in the window: 3 (observe 1, status 2), target 0",
		}},
		{name: "requests refused by RBAC", edit: func(r *Result) {
			r.Rounds = r.Rounds[:1]
			r.Refused, r.FirstRefused = 3, "aware-controller create events in namespace apps -> 403 at 2026-11-28T12:00:01Z"
		}, missed: []string{
			"requests refused by RBAC since start (audit log): 3 (first: aware-controller create events in namespace apps -> 403 at 2026-11-28T12:00:01Z), target 0",
		}},
		{name: "nothing sampled", edit: func(r *Result) {
			r.Rounds = r.Rounds[:1]
			r.Window, r.RSSMax, r.HWM = 0, 0, 0
		}, missed: []string{
			"controller CPU, average over 0s: 0.213 cores, target ≤ 1 core",
			"controller RSS, max sampled every 1s: 0.0 MiB, target ≤ 512.0 MiB",
			"controller RSS peak (VmHWM): 0.0 MiB, target ≤ 512.0 MiB",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResult()
			tc.edit(&r)
			assert.Equal(t, tc.missed, r.Missed())
			var b bytes.Buffer
			require.NoError(t, WriteTable(&b, r))
			assert.Contains(t, b.String(), "figure")
		})
	}
}
