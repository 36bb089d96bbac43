package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRootListsSubcommands(t *testing.T) {
	root := newRootCmd()
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetArgs([]string{"--help"})
	require.NoError(t, root.Execute())
	for _, sub := range []string{"run", "workload", "loadgen"} {
		assert.Contains(t, buf.String(), sub)
	}
}

func TestBuildSchedule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trace string
		rate  float64
		want  int // arrivals, -1 for "about rate × length"
	}{
		{"constant", traceConstant, 20, 200},
		{"poisson", tracePoisson, 20, -1},
		{"synthetic", traceSynthetic, 20, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildSchedule(tc.trace, tc.rate, 0, 10*time.Second, 3)
			require.NoError(t, err)
			require.NoError(t, s.Validate())
			if tc.want >= 0 {
				assert.Len(t, s.Arrivals, tc.want)
			} else {
				assert.InDelta(t, 200, len(s.Arrivals), 60)
			}
			again, err := buildSchedule(tc.trace, tc.rate, 0, 10*time.Second, 3)
			require.NoError(t, err)
			assert.Equal(t, s.Arrivals, again.Arrivals, "same seed, same schedule")
		})
	}
	_, err := buildSchedule("/nonexistent/trace.txt", 10, 0, time.Second, 1)
	assert.ErrorContains(t, err, "/nonexistent/trace.txt")
	_, err = buildSchedule(traceSynthetic, 10, 0, 0, 1)
	assert.ErrorContains(t, err, "--duration")
}

func TestServerCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	mk := func(name string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{"reason"})
		reg.MustRegister(c)
		return c
	}
	mk("aware_workload_requests_received_total").WithLabelValues("").Add(5)
	mk("aware_workload_requests_processed_total").WithLabelValues("").Add(3)
	failed := mk("aware_workload_requests_failed_total")
	failed.WithLabelValues("error").Add(1)
	failed.WithLabelValues("overload").Add(1)
	r, p, f, err := serverCounters(reg)
	require.NoError(t, err)
	assert.Equal(t, []float64{5, 3, 2}, []float64{r, p, f})

	_, _, _, err = serverCounters(prometheus.NewRegistry())
	assert.ErrorContains(t, err, "request counters missing")
}

func TestStartServicesRejectsUnknownMode(t *testing.T) {
	_, _, err := startServices(t.Context(), "cloud", t.TempDir(), nil)
	assert.ErrorContains(t, err, `--services "cloud"`)
}

// TestAgentsRefusesBadFlags: `aware agents` names each bad flag before it
// connects to anything.
func TestAgentsRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trainers", "0"}, "--trainers 0"},
		{[]string{"--memory-limit", "lots"}, `--memory-limit "lots"`},
		{[]string{"--memory-limit", "-1Mi"}, `--memory-limit "-1Mi"`},
		{[]string{"--replay", "0"}, "--replay 0"},
		{[]string{"--offline-checkpoint-every", "-1s"}, "--offline-checkpoint-every -1s"},
		{[]string{"--snapshots-from", "aware-controller:8080"}, `--snapshots-from "aware-controller:8080"`},
	} {
		cmd := newAgentsCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// TestControllerRefusesBadFlags: `aware controller` names each bad flag
// before it connects to anything.
func TestControllerRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vpa-recommender-interval", "-1m"}, "--vpa-recommender-interval -1m0s"},
		{[]string{"--webhook-failure-policy", "Maybe"}, `--webhook-failure-policy: "Maybe"`},
	} {
		cmd := newControllerCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// The aware binary runs in every workload pod and as the controller: the
// Pulumi SDK, which doubled its size and its memory at start (measured
// 40 → 92 MB maximum RSS for `aware trace --help`), stays in aware-testbed.
func TestAwareLeavesPulumiOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, pkg := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(pkg, "github.com/pulumi/"), "aware imports %s", pkg)
	}
}
