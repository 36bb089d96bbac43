package hpa_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
)

// TestStateKeepsTheWindow: a restored HPA holds back a scale-down for the
// rest of the stabilisation window the original was in, exactly as the
// original does, where a new HPA would scale down at once; records older
// than a restoring HPA's shorter window are dropped.
func TestStateKeepsTheWindow(t *testing.T) {
	demand := []float64{8, 8, 8, 8, 8, 2}
	orig := newHPA(t, step)
	run(orig, 4, demand)
	st := orig.State()
	require.NotEmpty(t, st.Records)

	restored, fresh := newHPA(t, step), newHPA(t, step)
	require.NoError(t, restored.Restore(st))
	assert.Equal(t, st, restored.State())
	rest := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
	want := run(orig, 8, rest)
	assert.Equal(t, want, run(restored, 8, rest))
	assert.NotEqual(t, want, run(fresh, 8, rest), "without the checkpoint the window is lost")

	short := newHPA(t, step, hpa.WithDownscaleStabilization(30*time.Second))
	require.NoError(t, short.Restore(st))
	kept := short.State().Records
	require.NotEmpty(t, kept)
	assert.Less(t, len(kept), len(st.Records))
	assert.GreaterOrEqual(t, kept[0].Call, st.Calls-2, "only what a 30 s window at 15 s steps reaches back to")
}

func TestRestoreRefuses(t *testing.T) {
	h := newHPA(t, step)
	run(h, 4, []float64{8, 8, 2})
	good := h.State()
	for _, tt := range []struct {
		name    string
		corrupt func(*hpa.State)
		err     string
	}{
		{"step", func(s *hpa.State) { s.Step = time.Minute }, "hpa: restore: step 1m0s, this HPA's is 15s"},
		{"calls", func(s *hpa.State) { s.Calls = -1 }, "calls -1 is negative"},
		{"order", func(s *hpa.State) { s.Records[1].Call = s.Records[0].Call }, "records[1]: call 0 is not after the previous record's 0"},
		{"range", func(s *hpa.State) { s.Records[0].Recorded, s.Records[0].Min, s.Records[0].Max = true, 5, 3 }, "records[0]: recommendations 5..3"},
		{"events", func(s *hpa.State) { s.Records[0].ScaledUp = -2 }, "scaled up -2"},
		{"status", func(s *hpa.State) { s.Status.Replicas = -1 }, "status"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			s.Records = append([]hpa.Record(nil), good.Records...)
			tt.corrupt(&s)
			assert.ErrorContains(t, h.Restore(s), tt.err)
			assert.Equal(t, good, h.State(), "a refused state changes nothing")
		})
	}
}
