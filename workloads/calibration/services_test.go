package calibration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

func TestParsePIDs(t *testing.T) {
	pids, err := ParsePIDs(" 12, 345,,")
	require.NoError(t, err)
	assert.Equal(t, []int{12, 345}, pids)
	pids, err = ParsePIDs("")
	require.NoError(t, err)
	assert.Empty(t, pids)
	_, err = ParsePIDs("12,x")
	assert.ErrorContains(t, err, `"x"`)
	_, err = ParsePIDs("0")
	assert.ErrorContains(t, err, "positive")
}

// writeStat writes a /proc/<pid>/stat with the given parent and times.
func writeStat(t *testing.T, proc string, pid, ppid int, comm string, ut, st, cut, cst int) {
	t.Helper()
	dir := filepath.Join(proc, fmt.Sprint(pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	line := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 1 0 100 1000 10\n", pid, comm, ppid, ut, st, cut, cst)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644))
}

func TestTreesCPU(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 1, 0, "init", 1000, 1000, 0, 0)
	writeStat(t, proc, 10, 1, "postgres", 5, 5, 30, 10) // postmaster; reaped backends 40
	writeStat(t, proc, 11, 10, "postgres: walwriter", 20, 0, 0, 0)
	writeStat(t, proc, 12, 10, "postgres: aware aware 127.0.0.1(5) idle", 100, 50, 0, 0)
	writeStat(t, proc, 13, 12, "odd) (child", 1, 1, 0, 0) // a grandchild, with parentheses in its name
	writeStat(t, proc, 20, 1, "versitygw", 7, 3, 0, 0)
	writeStat(t, proc, 30, 1, "other", 500, 500, 0, 0)
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "self"), 0o755)) // not a PID

	got, err := treesCPU(proc, []int{10, 20})
	require.NoError(t, err)
	// 10 + 40 reaped + 20 + 150 + 2 + 10 ticks, at 100 per second.
	assert.Equal(t, 2320*time.Millisecond, got)

	_, err = treesCPU(proc, []int{99})
	assert.ErrorContains(t, err, "process 99: not running")

	writeStat(t, proc, 40, 1, "short", 1, 1, 0, 0)
	require.NoError(t, os.WriteFile(filepath.Join(proc, "40", "stat"), []byte("40 (short) S 1 2"), 0o644))
	_, err = treesCPU(proc, []int{10})
	assert.ErrorContains(t, err, "40/stat")
}

func TestProcessTreesMetersThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	meter := ProcessTrees([]int{os.Getpid()})
	before, err := meter()
	require.NoError(t, err)
	// Spin until the kernel's tick-granular counter moves.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if now, err := meter(); err == nil && now > before {
			return
		}
	}
	t.Fatal("the meter did not see this process's CPU time grow")
}

// costlyDB is a segments.Database whose every call costs the "service" 2 ms
// of CPU on the meter.
type costlyDB struct{ spent atomic.Int64 }

func (d *costlyDB) Exec(context.Context, string, ...any) (int64, error) {
	d.spent.Add(int64(2 * time.Millisecond))
	return 1, nil
}

func (d *costlyDB) Query(context.Context, string, func([]any) error, ...any) error {
	d.spent.Add(int64(2 * time.Millisecond))
	return nil
}

func (d *costlyDB) CopyRows(_ context.Context, _ string, _ []string, rows [][]any) (int64, error) {
	d.spent.Add(int64(2 * time.Millisecond))
	return int64(len(rows)), nil
}

func TestMeasureMetersServices(t *testing.T) {
	db := &costlyDB{}
	opts := quickOptions()
	opts.Services = func() (time.Duration, error) { return time.Duration(db.spent.Load()), nil }
	env := segments.Env{Dir: t.TempDir(), DB: db}
	p, err := Run(context.Background(), []Target{{Segment: "dbWrite", Size: 1}, {Segment: "sleep", Size: 1}}, opts, InProcess(env, opts), nil)
	require.NoError(t, err)
	require.Len(t, p.Entries, 2)
	w, s := p.Entries[0], p.Entries[1]
	require.Equal(t, "dbWrite", w.Segment)
	assert.InDelta(t, 2e-3, w.ServiceCPUSeconds, 1e-9, "one upsert per request, 2 ms each; set-up not counted")
	assert.Equal(t, []float64{2e-3, 2e-3}, w.ServiceCPURepeats)
	assert.Zero(t, s.ServiceCPUSeconds, "sleep uses no service")
	assert.Empty(t, s.ServiceCPURepeats)

	opts.Services = func() (time.Duration, error) { return 0, errors.New("meter broke") }
	_, err = Run(context.Background(), []Target{{Segment: "dbWrite", Size: 1}}, opts, InProcess(env, opts), nil)
	assert.ErrorContains(t, err, "meter broke")
}
