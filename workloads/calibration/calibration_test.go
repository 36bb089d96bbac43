package calibration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/internal/quantile"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

func quickOptions() Options {
	return Options{Repeats: 2, Warmup: 1, MinRequests: 4, MinDuration: 10 * time.Millisecond, MaxRequests: 50, Rounds: 2, Concurrency: 3}
}

func TestRunMeasuresSleep(t *testing.T) {
	targets := []Target{{Segment: "sleep", Size: 5}, {Segment: "sleep", Size: 20}}
	var calls int
	opts := quickOptions()
	p, err := Run(context.Background(), targets, opts, InProcess(segments.Env{Dir: t.TempDir()}, opts), func(done, total int, _ Target) {
		calls++
		assert.Equal(t, calls, done)
		assert.Equal(t, 4, total)
	})
	require.NoError(t, err)
	require.NoError(t, p.Validate())
	require.Len(t, p.Entries, 2)
	for _, e := range p.Entries {
		want := time.Duration(e.Size) * time.Millisecond
		assert.InDelta(t, want.Seconds(), e.ServiceMean, want.Seconds()*0.5+2e-3, "sleep %d ms service time", e.Size)
		assert.Less(t, e.CPUSeconds, e.ServiceMean/2, "sleeping must not burn CPU")
		assert.Len(t, e.CPUSecondsRepeats, 2)
		assert.GreaterOrEqual(t, e.Requests, 4)
	}
	assert.Equal(t, 5, p.Entries[0].Size, "entries sorted by size")
	assert.Equal(t, Version, p.Version)
	assert.NotZero(t, p.Machine.NumCPU)
}

func TestRunMergesRepeats(t *testing.T) {
	calls := map[Target][]bool{}
	fake := func(_ context.Context, tg Target, first bool) (Entry, error) {
		calls[tg] = append(calls[tg], first)
		e := Entry{CPUSecondsRepeats: []float64{float64(len(calls[tg])) * 1e-3}, RSSBaseBytes: int64(tg.Size)}
		if first {
			e.Segment, e.Size, e.ServiceMean = tg.Segment, tg.Size, 1e-3
		}
		return e, nil
	}
	opts := quickOptions()
	opts.Repeats = 3
	p, err := Run(context.Background(), []Target{{"b", 7}, {"a", 5}}, opts, fake, nil)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, false}, calls[Target{"a", 5}])
	require.Len(t, p.Entries, 2)
	assert.Equal(t, "a", p.Entries[0].Segment, "sorted")
	assert.Equal(t, []float64{1e-3, 2e-3, 3e-3}, p.Entries[0].CPUSecondsRepeats)
	assert.InDelta(t, 2e-3, p.Entries[0].CPUSeconds, 1e-15, "median of the repeats")
	assert.Equal(t, int64(7), p.RSSBaseBytes, "largest base of the measuring processes")

	bad := func(context.Context, Target, bool) (Entry, error) { return Entry{}, nil }
	_, err = Run(context.Background(), []Target{{"a", 1}}, opts, bad, nil)
	assert.ErrorContains(t, err, "calibrate a size 1: measurer returned 0 CPU figures, want 1")
}

func TestTargets(t *testing.T) {
	all, err := Targets(nil, segments.Env{})
	require.NoError(t, err)
	for _, tg := range all {
		info, _ := segments.Lookup(tg.Segment)
		assert.NotContains(t, info.Needs, "objects", "object segments need a store")
		assert.NotContains(t, info.Needs, "db", "db segments need a database")
	}
	_, err = Targets([]string{"nope"}, segments.Env{})
	require.ErrorContains(t, err, `segment "nope": unknown`)
}

func TestOptionsValidate(t *testing.T) {
	for name, o := range map[string]Options{
		"repeats":     {Repeats: 0, MinRequests: 2, MaxRequests: 2, Rounds: 1, Concurrency: 1},
		"minRequests": {Repeats: 1, MinRequests: 1, MaxRequests: 2, Rounds: 1, Concurrency: 1},
		"maxRequests": {Repeats: 1, MinRequests: 5, MaxRequests: 2, Rounds: 1, Concurrency: 1},
		"rounds":      {Repeats: 1, MinRequests: 2, MaxRequests: 2, Rounds: 3, Concurrency: 1},
		"concurrency": {Repeats: 1, MinRequests: 2, MaxRequests: 2, Rounds: 1, Concurrency: 0},
	} {
		_, err := Run(context.Background(), []Target{{"sleep", 1}}, o, InProcess(segments.Env{}, o), nil)
		assert.ErrorContains(t, err, name, name)
		_, err = MeasureOne(context.Background(), Target{"sleep", 1}, segments.Env{}, o, true)
		assert.ErrorContains(t, err, name, name)
	}
}

func sampleProfile() *Profile {
	return &Profile{Version: Version, Command: "aware workload calibrate", Entries: []Entry{
		{Segment: "b", Size: 2, CPUSeconds: 1e-3, CPUSecondsRepeats: []float64{1e-3, 1.05e-3}, ServiceMean: 2e-3},
		{Segment: "a", Size: 1, CPUSeconds: 1e-3, CPUSecondsRepeats: []float64{0.8e-3, 1.2e-3}, ServiceMean: 2e-3},
		{Segment: "a", Size: 3, CPUSeconds: 1e-6, CPUSecondsRepeats: []float64{1e-6, 3e-6}, ServiceMean: 1e-4},
	}}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := sampleProfile()
	p.Sort()
	path := filepath.Join(t.TempDir(), "profile.json")
	require.NoError(t, p.Save(path))
	got, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, p.Entries, got.Entries)
	e, ok := got.Lookup("a", 3)
	require.True(t, ok)
	assert.Equal(t, 1e-6, e.CPUSeconds)
	_, ok = got.Lookup("a", 2)
	assert.False(t, ok)
}

func TestSaveRefusesInvalidAndKeepsOld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	require.NoError(t, sampleProfile().Save(path))
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := sampleProfile()
	bad.Entries[0].Size = 0
	require.ErrorContains(t, bad.Save(path), "size: 0 must be positive")
	now, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, old, now, "a refused save must not touch the existing profile")
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"syntax":    {`{"version":1,`, "p.json: unexpected EOF"},
		"version":   {`{"version":9,"entries":[]}`, "version 9: this build reads version 1"},
		"empty":     {`{"version":1,"entries":[]}`, "entries: empty"},
		"unknown":   {`{"version":1,"bogus":1}`, `unknown field "bogus"`},
		"duplicate": {`{"version":1,"entries":[{"segment":"a","size":1,"serviceMeanSeconds":1},{"segment":"a","size":1,"serviceMeanSeconds":1}]}`, "entries[1]: duplicate a/1"},
		"negative":  {`{"version":1,"entries":[{"segment":"a","size":1,"cpuSeconds":-1,"serviceMeanSeconds":1}]}`, "entries[0] (a/1): negative"},
	} {
		_, err := Parse("p.json", []byte(tc.data))
		assert.ErrorContains(t, err, tc.want, name)
	}
}

func TestAgreement(t *testing.T) {
	p := sampleProfile()
	agree, total := p.Agreement()
	assert.Equal(t, 3, total)
	// b: 5 % spread agrees; a/1: 40 % disagrees; a/3: 200 % but only 2 µs apart.
	assert.Equal(t, 2, agree)
	var buf bytes.Buffer
	require.NoError(t, p.WriteTable(&buf))
	assert.Contains(t, buf.String(), "2 of 3 entries within 10%")
	assert.Contains(t, buf.String(), "NO")
}

func TestShare(t *testing.T) {
	for _, tc := range []struct{ total, rounds int }{{10, 3}, {5000, 5}, {3, 3}, {7, 2}} {
		sum := 0
		for r := range tc.rounds {
			n := share(tc.total, r, tc.rounds)
			assert.InDelta(t, float64(tc.total)/float64(tc.rounds), n, 1, "%+v round %d", tc, r)
			sum += n
		}
		assert.Equal(t, tc.total, sum, "%+v", tc)
	}
}

func TestStatistics(t *testing.T) {
	m, cv := meanCV([]float64{1, 2, 3, 4})
	assert.InDelta(t, 2.5, m, 1e-12)
	assert.InDelta(t, 1.2909944487/2.5, cv, 1e-9)
	assert.InDelta(t, 3.85, quantile.Linear([]float64{4, 1, 3, 2}, 0.95), 1e-12, "the service p95 is quantile.Linear")
	assert.InDelta(t, 2.5, quantile.Median([]float64{4, 1, 3, 2}), 1e-12)
}

func TestDefaultProfileValid(t *testing.T) {
	p, err := Default()
	require.NoError(t, err, "the committed profile.json must parse; regenerate it with make calibrate")
	for _, name := range segments.Names() {
		info, _ := segments.Lookup(name)
		for _, size := range info.Sizes {
			_, ok := p.Lookup(name, size)
			assert.True(t, ok, "committed profile lacks %s size %d: run make calibrate", name, size)
		}
	}
}

func TestCompareCPU(t *testing.T) {
	ref := sampleProfile()
	m := sampleProfile()
	m.Entries[0].CPUSeconds = 2e-3 // b/2 doubles
	m.Entries = append(m.Entries, Entry{Segment: "c", Size: 1, CPUSeconds: 1})
	rs := CompareCPU(m, ref, 1e-5)
	require.Len(t, rs, 2, "a/3 is below the floor and c/1 is not in the reference")
	assert.Equal(t, "a", rs[0].Segment)
	assert.InDelta(t, 2.0, rs[1].Value(), 1e-12)
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, rs))
	assert.Contains(t, buf.String(), "over 2 entries: median 1.50, lowest 1.00 (a 1), highest 2.00 (b 2)")
}

func TestAgreesIdleFloor(t *testing.T) {
	// A 100 ms sleep whose CPU is the runtime's background work: 0.1 ms apart
	// is 0.1 % of a core over the request, within the 0.5 % idle floor.
	sleep := Entry{CPUSeconds: 0.25e-3, CPUSecondsRepeats: []float64{0.2e-3, 0.3e-3}, ServiceMean: 0.1}
	assert.True(t, sleep.Agrees(AgreeRel, AgreeAbs, AgreeIdle))
	// The same CPU difference on a 1 ms request is real disagreement.
	busy := sleep
	busy.ServiceMean = 1e-3
	assert.False(t, busy.Agrees(AgreeRel, AgreeAbs, AgreeIdle))
}
