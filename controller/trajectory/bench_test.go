package trajectory_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// stepSource produces valid steps for many apps round robin, reusing its
// vectors (stores copy or encode them).
type stepSource struct {
	apps    []string
	ep      []int64
	t       []int
	next    time.Time
	state   []float64
	action  []float64
	epSteps int
}

func newStepSource(apps, sdim, epSteps int) *stepSource {
	src := &stepSource{ep: make([]int64, apps), t: make([]int, apps), next: t0, epSteps: epSteps,
		state: make([]float64, sdim), action: []float64{3, 0.5, 512 << 20}}
	for a := range apps {
		src.apps = append(src.apps, "bench/app-"+strconv.Itoa(a))
	}
	for j := range src.state {
		src.state[j] = float64(j) / 7
	}
	return src
}

// step returns the next step of app a.
func (src *stepSource) step(a int) trajectory.Step {
	src.next = src.next.Add(time.Millisecond)
	st := trajectory.Step{App: src.apps[a], Episode: src.ep[a], T: src.t[a], Time: src.next, State: src.state,
		Action: src.action, Reward: float64(src.t[a]%7) / 3, Done: src.t[a] == src.epSteps-1, Stage: "ONLINE"}
	src.t[a]++
	if st.Done {
		src.t[a] = 0
		src.ep[a]++
	}
	return st
}

// BenchmarkFileAppend measures FileStore's append throughput with the
// fsyncs of Flush included: single steps round robin over 1000 apps with a
// Flush every 100 steps (the controller's pattern), and whole episodes per
// Append with a Flush after each.
func BenchmarkFileAppend(b *testing.B) {
	for _, bc := range []struct {
		name       string
		perAppend  int
		flushEvery int
		sdim       int
	}{
		{"1step-flush100-sdim10", 1, 100, 10},
		{"1step-flush100-sdim74", 1, 100, 74},
		{"100steps-flush1-sdim10", 100, 1, 10},
		{"1step-noflush-sdim10", 1, 0, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := trajectory.OpenFile(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchAppend(b, s, bc.sdim, bc.perAppend, bc.flushEvery, false)
		})
	}
}

// benchAppend appends perAppend steps per call, round robin over 1000
// apps with states of sdim values, calling Flush every flushEvery calls
// (0: never) and, if finalFlush, once at the end, and reports steps/s.
func benchAppend(b *testing.B, s trajectory.Store, sdim, perAppend, flushEvery int, finalFlush bool) {
	ctx := context.Background()
	src := newStepSource(1000, sdim, 100)
	batch := make([]trajectory.Step, perAppend)
	a, calls, steps := 0, 0, 0
	for b.Loop() {
		for i := range batch {
			batch[i] = src.step(a)
		}
		a = (a + 1) % len(src.apps)
		if err := s.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		steps += len(batch)
		calls++
		if flushEvery > 0 && calls%flushEvery == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if finalFlush {
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkInfluxAppend measures InfluxStore's append throughput into a
// real InfluxDB, with delivery (batches of 1000, the default) included by
// a Flush at the end: single steps round robin over 1000 apps (the
// controller's pattern; every Append also writes the journal) and whole
// episodes per Append.
func BenchmarkInfluxAppend(b *testing.B) {
	l := sharedInflux(b)
	for _, bc := range []struct {
		name      string
		perAppend int
	}{
		{"1step-sdim10", 1},
		{"100steps-sdim10", 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := trajectory.OpenInflux(context.Background(), l.URL(), b.TempDir(), trajectory.WithDatabase(freshDB()))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchAppend(b, s, 10, bc.perAppend, 0, true)
		})
	}
}

// BenchmarkInfluxEpisodeEnds measures the controller's pattern with
// agents at 1000 MPAs whose episodes end together: 8 workers (the
// controller's concurrency) each step their share of the apps round robin,
// one step per Append, and an app whose episode ends reads its recent
// episodes (the lifecycle's read, which flushes first). It reports
// steps/s.
func BenchmarkInfluxEpisodeEnds(b *testing.B) {
	l := sharedInflux(b)
	const apps, workers, epSteps = 1000, 8, 16
	b.Run("1000apps-8workers-ep16", func(b *testing.B) {
		s, err := trajectory.OpenInflux(context.Background(), l.URL(), b.TempDir(), trajectory.WithDatabase(freshDB()))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		srcs := make([]*stepSource, workers)
		for w := range srcs {
			srcs[w] = newStepSource(apps/workers, 10, epSteps)
			for a := range srcs[w].apps {
				srcs[w].apps[a] = "bench/w" + strconv.Itoa(w) + "-app-" + strconv.Itoa(a)
			}
		}
		var next atomic.Int64
		b.SetParallelism(max(1, workers/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			src := srcs[int(next.Add(1)-1)%workers]
			ctx := context.Background()
			a := 0
			for pb.Next() {
				st := src.step(a)
				if err := s.Append(ctx, st); err != nil {
					b.Error(err)
					return
				}
				if st.Done {
					if _, err := s.RecentEpisodes(ctx, st.App, 4); err != nil {
						b.Error(err)
						return
					}
				}
				a = (a + 1) % len(src.apps)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		b.ReportMetric(float64(s.ForcedRounds()), "forced-rounds")
	})
}

// BenchmarkFileRead builds a store of 100 apps × 20 episodes × 100 steps
// and measures reopening it (from segment summaries, and by scanning every
// segment), the index's memory per episode, and Top(20), the meta
// learner's read.
func BenchmarkFileRead(b *testing.B) {
	dir := b.TempDir()
	const apps, episodes, steps = 100, 20, 100
	func() {
		s, err := trajectory.OpenFile(dir, trajectory.WithSegmentSize(8<<20))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		src := newStepSource(apps, 10, steps)
		batch := make([]trajectory.Step, apps)
		for range episodes * steps {
			for a := range apps {
				batch[a] = src.step(a)
			}
			if err := s.Append(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
		}
	}()
	var size int64
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	for _, p := range segs {
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	b.Logf("store: %d steps, %d segments, %.1f MiB, %.0f bytes/step", apps*episodes*steps, len(segs), float64(size)/(1<<20),
		float64(size)/float64(apps*episodes*steps))

	b.Run("open-summaries", func(b *testing.B) {
		var before, after runtime.MemStats
		for b.Loop() {
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, err := trajectory.OpenFile(dir)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.StopTimer()
			runtime.KeepAlive(s)
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(apps*(episodes+1)), "heapB/episode")
	})
	b.Run("open-scan", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			sums, _ := filepath.Glob(filepath.Join(dir, "seg-*.sum"))
			for _, p := range sums {
				os.Remove(p)
			}
			b.StartTimer()
			s, err := trajectory.OpenFile(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(apps*episodes*steps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
	b.Run("top20", func(b *testing.B) {
		s, err := trajectory.OpenFile(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		i := 0
		for b.Loop() {
			top, err := s.Top(ctx, "bench/app-"+strconv.Itoa(i%apps), 20)
			if err != nil || len(top) != 20 || len(top[0].Steps) != steps {
				b.Fatalf("top: %v, %d", err, len(top))
			}
			i++
		}
	})
}
