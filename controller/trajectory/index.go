package trajectory

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"
)

// meta summarises one episode of one application: everything an index
// keeps per episode besides where the steps are.
type meta struct {
	episode    int64
	start, end int64 // Unix ns of the first and last step
	reward     float64
	steps      int32
	done       bool
}

func (m meta) toEpisode(app string) Episode {
	return Episode{App: app, Episode: m.episode, Start: fromNanos(m.start), End: fromNanos(m.end),
		Steps: int(m.steps), Reward: m.reward}
}

// entry is one episode in an index, with the store's handle on its steps
// (the steps themselves for Memory, the location of its last step for
// FileStore, nothing for InfluxStore).
type entry[E any] struct {
	meta
	data E
}

// appIndex is the index of one application: the dimensions fixed by its
// first step and its episodes in order (of number, and so of time).
type appIndex[E any] struct {
	stateDim, actionDim int
	eps                 []entry[E]
}

// index maps applications to their episodes; the caller synchronises.
type index[E any] struct {
	apps map[string]*appIndex[E]
}

func newIndex[E any]() index[E] { return index[E]{apps: make(map[string]*appIndex[E])} }

// placement is the outcome of validating one step: the summary of its
// episode once the step is added, and whether the step opens the episode.
type placement struct {
	meta  meta
	fresh bool
}

// plan validates steps, in order, against the index and each other,
// without changing the index, and returns where each step goes.
func (ix *index[E]) plan(steps []Step) ([]placement, error) {
	type state struct {
		stateDim, actionDim int
		last                meta
		has                 bool
	}
	var overlay map[string]*state
	if len(steps) > 1 {
		overlay = make(map[string]*state)
	}
	out := make([]placement, len(steps))
	for i := range steps {
		s := &steps[i]
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: steps[%d] (app %q, episode %d, T %d): %s", ErrInvalid, i, s.App, s.Episode, s.T,
				fmt.Sprintf(format, args...))
		}
		if msg := checkFields(s); msg != "" {
			return nil, fail("%s", msg)
		}
		var st *state
		if overlay != nil {
			st = overlay[s.App]
		}
		if st == nil {
			st = &state{stateDim: -1, actionDim: -1}
			if a := ix.apps[s.App]; a != nil {
				st.stateDim, st.actionDim = a.stateDim, a.actionDim
				if n := len(a.eps); n > 0 {
					st.last, st.has = a.eps[n-1].meta, true
				}
			}
			if overlay != nil {
				overlay[s.App] = st
			}
		}
		if st.stateDim >= 0 && len(s.State) != st.stateDim {
			return nil, fail("field State: %d values, but the app's steps have %d (fixed by its first step)", len(s.State), st.stateDim)
		}
		if st.actionDim >= 0 && len(s.Action) != st.actionDim {
			return nil, fail("field Action: %d values, but the app's steps have %d (fixed by its first step)", len(s.Action), st.actionDim)
		}
		ns := s.Time.UnixNano()
		var p placement
		switch {
		case st.has && s.Episode == st.last.episode:
			if st.last.done {
				return nil, fail("field Episode: episode %d is already complete (its Done step was T %d)", s.Episode, st.last.steps-1)
			}
			if want := int(st.last.steps); s.T != want {
				return nil, fail("field T: %d, want %d (the next step of episode %d)", s.T, want, s.Episode)
			}
			p.meta = st.last
		case st.has && s.Episode < st.last.episode:
			return nil, fail("field Episode: %d comes after episode %d; episode numbers must increase", s.Episode, st.last.episode)
		default:
			if s.T != 0 {
				return nil, fail("field T: %d, want 0 (the first step of episode %d)", s.T, s.Episode)
			}
			p.fresh = true
			p.meta = meta{episode: s.Episode, start: ns}
		}
		if st.has && ns <= st.last.end {
			return nil, fail("field Time: %s is not after the app's previous step at %s; step times must increase",
				fromNanos(ns).Format(time.RFC3339Nano), fromNanos(st.last.end).Format(time.RFC3339Nano))
		}
		p.meta.end = ns
		p.meta.reward += s.Reward
		p.meta.steps++
		p.meta.done = s.Done
		out[i] = p
		st.stateDim, st.actionDim = len(s.State), len(s.Action)
		st.last, st.has = p.meta, true
	}
	return out, nil
}

// checkFields validates one step on its own, returning a message naming
// the field, or "".
func checkFields(s *Step) string {
	if msg := checkName(s.App); msg != "" {
		return "field App: " + msg
	}
	if s.Episode < 0 {
		return fmt.Sprintf("field Episode: %d is negative", s.Episode)
	}
	if s.T < 0 || s.T >= math.MaxInt32 {
		return fmt.Sprintf("field T: %d is out of range [0, %d)", s.T, math.MaxInt32)
	}
	if s.Time.IsZero() {
		return "field Time: not set"
	}
	if ns := s.Time.UnixNano(); !time.Unix(0, ns).Equal(s.Time) {
		return fmt.Sprintf("field Time: %s is outside the range of Unix nanoseconds (years 1678 to 2262)", s.Time)
	}
	if !finite(s.Reward) {
		return fmt.Sprintf("field Reward: %v is not a finite number", s.Reward)
	}
	for j, v := range s.State {
		if !finite(v) {
			return fmt.Sprintf("field State[%d]: %v is not a finite number", j, v)
		}
	}
	if len(s.Action) == 0 {
		return "field Action: empty"
	}
	for j, v := range s.Action {
		if !finite(v) {
			return fmt.Sprintf("field Action[%d]: %v is not a finite number", j, v)
		}
	}
	if !utf8.ValidString(s.Stage) {
		return "field Stage: not valid UTF-8"
	}
	for _, r := range s.Stage {
		if unicode.IsControl(r) {
			return fmt.Sprintf("field Stage: %q holds a control character", s.Stage)
		}
	}
	return ""
}

// checkName validates an application name: non-empty UTF-8 without
// control characters or backslashes (which InfluxDB 1.x tags cannot
// carry faithfully).
func checkName(app string) string {
	switch {
	case app == "":
		return "empty"
	case !utf8.ValidString(app):
		return "not valid UTF-8"
	}
	for _, r := range app {
		if unicode.IsControl(r) {
			return fmt.Sprintf("%q holds a control character", app)
		}
		if r == '\\' {
			return fmt.Sprintf("%q holds a backslash", app)
		}
	}
	return ""
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// add records a planned step in the index and returns its episode's
// entry, for the caller to update the entry's data.
func (ix *index[E]) add(s *Step, p placement) *entry[E] {
	a := ix.apps[s.App]
	if a == nil {
		a = &appIndex[E]{stateDim: len(s.State), actionDim: len(s.Action)}
		ix.apps[s.App] = a
	}
	if p.fresh {
		a.eps = append(a.eps, entry[E]{meta: p.meta})
	} else {
		a.eps[len(a.eps)-1].meta = p.meta
	}
	return &a.eps[len(a.eps)-1]
}

// names returns the applications, sorted.
func (ix *index[E]) names() []string {
	out := make([]string, 0, len(ix.apps))
	for app := range ix.apps {
		out = append(out, app)
	}
	slices.Sort(out)
	return out
}

// recentDone returns the positions of the last n complete episodes, oldest
// first.
// recent is RecentEpisodes over the index: the last n complete episodes of
// app, oldest first (nil for an unknown app).
func (ix *index[E]) recent(app string, n int) []Episode {
	a := ix.apps[app]
	if a == nil {
		return nil
	}
	var out []Episode
	for _, i := range recentDone(a.eps, n) {
		out = append(out, a.eps[i].toEpisode(app))
	}
	return out
}

func recentDone[E any](eps []entry[E], n int) []int {
	var out []int
	for i := len(eps) - 1; i >= 0 && len(out) < n; i-- {
		if eps[i].done {
			out = append(out, i)
		}
	}
	slices.Reverse(out)
	return out
}

// topDone returns the positions of the m complete episodes with the highest
// reward, best first; ties go to the higher episode number.
func topDone[E any](eps []entry[E], m int) []int {
	if m <= 0 {
		return nil
	}
	var all []int
	for i := range eps {
		if eps[i].done {
			all = append(all, i)
		}
	}
	slices.SortFunc(all, func(a, b int) int { return compareEpisodes(eps[a].meta, eps[b].meta) })
	return all[:min(m, len(all))]
}

// compareEpisodes orders episodes best first: higher reward, then higher
// episode number.
func compareEpisodes(a, b meta) int {
	if c := cmp.Compare(b.reward, a.reward); c != 0 {
		return c
	}
	return cmp.Compare(b.episode, a.episode)
}

// overlapping returns the positions [i, j) of the episodes with steps that
// may lie in [from, to) Unix ns: episodes are in time order and do not
// overlap, so those that end at or after from and start before to.
func overlapping[E any](eps []entry[E], from, to int64) (int, int) {
	i := sort.Search(len(eps), func(k int) bool { return eps[k].end >= from })
	j := sort.Search(len(eps), func(k int) bool { return eps[k].start >= to })
	return i, max(i, j)
}

// fromNanos converts Unix ns to a UTC time.
func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// normalized returns a copy of s that shares no memory with it, its Time
// in UTC without a monotonic reading, as stores return steps.
func normalized(s *Step) Step {
	c := *s
	c.Time = fromNanos(s.Time.UnixNano())
	c.State = slices.Clone(s.State)
	c.Action = slices.Clone(s.Action)
	if c.State == nil {
		c.State = []float64{}
	}
	return c
}

// summarize returns the summary of steps (non-empty, one episode) as Range
// reports it.
func summarize(app string, steps []Step) Trajectory {
	tr := Trajectory{Episode: Episode{App: app, Episode: steps[0].Episode, Start: steps[0].Time,
		End: steps[len(steps)-1].Time, Steps: len(steps)}, Steps: steps}
	for _, s := range steps {
		tr.Reward += s.Reward
	}
	return tr
}

// checkCount validates the n of RecentEpisodes or m of Top.
func checkCount(name string, n int) error {
	if n < 0 {
		return fmt.Errorf("trajectory: %s %d is negative", name, n)
	}
	return nil
}

// checkRange validates the bounds of Range.
func checkRange(from, to time.Time) error {
	if to.Before(from) {
		return fmt.Errorf("trajectory: range end %s is before its start %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	return nil
}

// rangeNanos converts Range bounds to Unix ns, saturating outside the
// representable years.
func rangeNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
