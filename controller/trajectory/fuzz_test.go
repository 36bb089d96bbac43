package trajectory_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// FuzzOpenDamaged: a store whose sealed segment's summary, or whose last
// segment's tail, is replaced by arbitrary bytes opens (summaries are
// checked and the segment rescanned, a damaged tail cut off) and reads
// every episode that lay wholly before the damage; it never panics.
func FuzzOpenDamaged(f *testing.F) {
	src := f.TempDir()
	s, err := trajectory.OpenFile(src, trajectory.WithSegmentSize(4<<10))
	if err != nil {
		f.Fatal(err)
	}
	g := newGen("ns/app", t0)
	for ep := range int64(12) {
		for _, st := range g.episode(ep, rewards(8, 1), true) {
			if err := s.Append(f.Context(), st); err != nil {
				f.Fatal(err)
			}
		}
	}
	want, err := s.RecentEpisodes(f.Context(), "ns/app", 100)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	sums, _ := filepath.Glob(filepath.Join(src, "seg-*.sum"))
	logs, _ := filepath.Glob(filepath.Join(src, "seg-*.log"))
	if len(sums) == 0 || len(logs) < 2 {
		f.Fatalf("want sealed segments: %d summaries, %d segments", len(sums), len(logs))
	}
	sum0, _ := os.ReadFile(sums[0])
	f.Add(true, sum0)
	f.Add(true, sum0[:len(sum0)/2])
	f.Add(false, []byte{})
	f.Add(false, []byte("AWTRJ\x00\x00\x01garbage"))
	f.Fuzz(func(t *testing.T, summary bool, data []byte) {
		dir := t.TempDir()
		for _, p := range append(append([]string(nil), sums...), logs...) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		intact := len(want)
		if summary {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(sums[0])), data, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			last := filepath.Join(dir, filepath.Base(logs[len(logs)-1]))
			b, _ := os.ReadFile(last)
			cut := min(len(b), 64)
			if err := os.WriteFile(last, append(b[:cut], data...), 0o644); err != nil {
				t.Fatal(err)
			}
			intact = -1 // the last segment's episodes may be cut
		}
		s, err := trajectory.OpenFile(dir)
		if err != nil {
			return
		}
		defer s.Close()
		got, err := s.RecentEpisodes(t.Context(), "ns/app", 100)
		if err != nil {
			t.Fatal(err)
		}
		if intact >= 0 && len(got) != intact {
			t.Fatalf("a damaged summary lost episodes: %d of %d", len(got), intact)
		}
		if _, err := s.Range(t.Context(), "ns/app", time.Time{}, t0.Add(1000*time.Hour)); err != nil {
			t.Fatalf("episodes indexed but unreadable: %v", err)
		}
	})
}
