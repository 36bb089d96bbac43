package scale

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func TestTrackerRounds(t *testing.T) {
	T := time.Date(2025, 1, 1, 12, 0, 15, 0, time.UTC)
	step := 15 * time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type obs struct {
		key     string
		rec, at time.Duration // relative to T
		fp      string        // the status fingerprint ("": a new one)
	}
	for _, tc := range []struct {
		name     string
		obs      []obs
		deadline time.Duration // relative to T; 0: none
		want     Round
	}{
		{
			name: "complete",
			obs: []obs{
				{"a", -step, -step + ms(100), ""}, // the previous round
				{"a", 0, ms(300), ""}, {"b", 0, ms(100), ""}, {"c", 0, ms(2000), ""},
			},
			deadline: 2 * step,
			want:     Round{Start: T, Arrived: 3, Want: 3, Complete: true, Changed: 3, Duration: ms(2000), P50: ms(300), P95: ms(2000)},
		},
		{
			name:     "a status rewrite of the same recommendation is not a new arrival",
			obs:      []obs{{"a", 0, ms(100), ""}, {"a", 0, ms(900), ""}, {"b", 0, ms(200), ""}, {"c", 0, ms(300), ""}},
			deadline: 2 * step,
			want:     Round{Start: T, Arrived: 3, Want: 3, Complete: true, Changed: 3, Duration: ms(300), P50: ms(200), P95: ms(300)},
		},
		{
			name: "incomplete: one MPA missing, one after the deadline",
			obs: []obs{
				{"a", 0, ms(100), ""}, {"b", 0, 2*step + ms(1), ""},
			},
			deadline: 2 * step,
			want:     Round{Start: T, Arrived: 1, Want: 3, Changed: 1, Duration: ms(100), P50: ms(100), P95: ms(100)},
		},
		{
			name: "a step that began in the next round counts for this one, as deferred",
			obs: []obs{
				{"a", 0, ms(100), ""}, {"b", 0, ms(200), ""}, {"c", step + time.Second, step + ms(1500), ""},
			},
			deadline: 2 * step,
			want:     Round{Start: T, Arrived: 3, Want: 3, Complete: true, Deferred: 1, Changed: 3, Duration: step + ms(1500), P50: ms(200), P95: step + ms(1500)},
		},
		{
			name: "older recommendations seen late are ignored",
			obs: []obs{
				{"a", 0, ms(100), ""}, {"a", -step, ms(150), ""}, {"b", 0, ms(200), ""}, {"c", 0, ms(300), ""},
			},
			want: Round{Start: T, Arrived: 3, Want: 3, Complete: true, Changed: 3, Duration: ms(300), P50: ms(200), P95: ms(300)},
		},
		{
			name: "a status unchanged but for time and counters is counted apart",
			obs: []obs{
				{"a", -step, -step + ms(100), "x"}, {"a", 0, ms(100), "x"},
				{"b", -step, -step + ms(100), "y"}, {"b", 0, ms(200), "z"}, {"c", 0, ms(300), "x"},
			},
			want: Round{Start: T, Arrived: 3, Want: 3, Complete: true, Changed: 2, Duration: ms(300), P50: ms(200), P95: ms(300)},
		},
		{
			name: "nothing yet",
			obs:  []obs{{"a", -step, -ms(100), ""}},
			want: Round{Start: T, Want: 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker()
			for _, o := range tc.obs {
				fp := o.fp
				if fp == "" {
					fp = o.key + o.rec.String()
				}
				tr.observe(o.key, T.Add(o.rec), T.Add(o.at), fp)
			}
			var deadline time.Time
			if tc.deadline != 0 {
				deadline = T.Add(tc.deadline)
			}
			assert.Equal(t, tc.want, tr.round(T, deadline, step, []string{"a", "b", "c"}))
		})
	}
}

func TestQuantile(t *testing.T) {
	d := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, x := range n {
			out[i] = time.Duration(x)
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{d(1), 0.5, 1},
		{d(1, 2), 0.5, 1},
		{d(1, 2, 3, 4), 0.5, 2},
		{d(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 0.95, 19},
		{d(1, 2, 3), 1, 3},
		{d(1, 2, 3), 0, 1},
	} {
		assert.Equal(t, tc.want, quantile(tc.in, tc.q), "%v q=%g", tc.in, tc.q)
	}
}

func TestTrackerCSV(t *testing.T) {
	T := time.Date(2025, 1, 1, 12, 0, 15, 0, time.UTC)
	tr := newTracker()
	tr.observe("ns/a", T.Add(-time.Minute), T.Add(-time.Minute), "x") // before the range
	tr.observe("ns/a", T, T.Add(1500*time.Millisecond), "x")
	tr.observe("ns/b", T.Add(15*time.Second), T.Add(15250*time.Millisecond), "y")
	tr.observe("ns/b", T.Add(30*time.Second), T.Add(31*time.Second), "z") // at the range's end
	path := filepath.Join(t.TempDir(), "arrivals.csv")
	require.NoError(t, tr.writeCSV(path, []string{"ns/a", "ns/b"}, T, T.Add(30*time.Second)))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "mpa,recommendation,arrival,changed\n"+
		"ns/a,2025-01-01T12:00:15Z,2025-01-01T12:00:16.5Z,false\n"+
		"ns/b,2025-01-01T12:00:30Z,2025-01-01T12:00:30.25Z,true\n", string(got))
}

func TestStatusFingerprint(t *testing.T) {
	at := time.Date(2025, 1, 1, 12, 0, 15, 0, time.UTC)
	s := controllerStatus(3, at)
	next := *s.DeepCopy()
	next.Recommendation.Time = &metav1.Time{Time: at.Add(15 * time.Second)}
	next.Agent.Step++
	next.Agent.EpisodeReward += 1.5
	next.Agent.LastStepReward = ptr(1.5)
	assert.Equal(t, statusFingerprint(&s), statusFingerprint(&next), "only time and the agent's counters moved")
	next.Recommendation.Replicas = ptr[int32](3)
	assert.NotEqual(t, statusFingerprint(&s), statusFingerprint(&next))
	next = *s.DeepCopy()
	next.Conditions[1].Status = "False"
	assert.NotEqual(t, statusFingerprint(&s), statusFingerprint(&next))
}
