package trajectory_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// killChildEnv makes the test binary run killChild instead of the tests.
const killChildEnv = "AWARE_TRAJECTORY_KILL_CHILD"

// killSteps are the steps the child appends: an episode it flushes to
// InfluxDB, then three steps of the next that stay in its buffer.
func killSteps() (flushed, buffered []trajectory.Step) {
	g := newGen("ns/killed", t0)
	return g.episode(0, rewards(5, 5), true), g.episode(1, []float64{1, 2, 3}, false)
}

// killChild opens a store as the environment says, appends killSteps,
// says "appended" and waits to be killed.
func killChild() int {
	ctx := context.Background()
	s, err := trajectory.OpenInflux(ctx, os.Getenv("TRAJ_URL"), os.Getenv("TRAJ_SPOOL"),
		trajectory.WithDatabase(os.Getenv("TRAJ_DB")), trajectory.WithFlushInterval(time.Hour))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	flushed, buffered := killSteps()
	if err := s.Append(ctx, flushed...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Flush(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Append(ctx, buffered...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("appended")
	select {}
}

// TestInfluxKilledProcessLosesNoStep kills (SIGKILL) a process whose store
// holds appended steps in its buffer: the next open finds them in the
// journal and delivers them, and the episode continues.
func TestInfluxKilledProcessLosesNoStep(t *testing.T) {
	l := sharedInflux(t)
	ctx := t.Context()
	db, spool := freshDB(), t.TempDir()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"=1", "TRAJ_URL="+l.URL(), "TRAJ_SPOOL="+spool, "TRAJ_DB="+db)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "child: %s", stderr.String())
	require.Equal(t, "appended\n", line)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()
	assert.NotEmpty(t, segments(t, spool, "journal-*.log"), "the buffered steps are journaled")

	flushed, buffered := killSteps()
	log, logs := testLogger()
	s := openInflux(t, l.URL(), spool, trajectory.WithDatabase(db), trajectory.WithLogger(log))
	assert.Contains(t, logs.String(), "moved to the spool")
	assert.Empty(t, segments(t, spool, "journal-*.log"), "the journal is emptied into the spool at open")

	// The store knows the buffered steps: the episode continues after them.
	err = s.Append(ctx, buffered[2])
	require.ErrorIs(t, err, trajectory.ErrInvalid)
	assert.ErrorContains(t, err, "field T: 2, want 3")
	g := newGen("ns/killed", buffered[2].Time.Add(10*time.Second))
	next := g.episode(1, []float64{4}, true)
	next[0].T = 3
	require.NoError(t, s.Append(ctx, next...))
	require.NoError(t, s.Flush(ctx))

	got, err := s.Range(ctx, "ns/killed", time.Time{}, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, flushed, got[0].Steps)
	assert.Equal(t, append(buffered, next...), got[1].Steps, "no step lost, none doubled")
	recent, err := s.RecentEpisodes(ctx, "ns/killed", 1)
	require.NoError(t, err)
	require.Len(t, recent, 1)
	assert.Equal(t, 4, recent[0].Steps)
	assert.InDelta(t, 10, recent[0].Reward, 1e-9)
}

// TestInfluxJournalSegments: the journal starts new segments as it grows
// and removes those whose steps are delivered; the last one is emptied,
// and removed at Close.
func TestInfluxJournalSegments(t *testing.T) {
	l := sharedInflux(t)
	ctx := t.Context()
	spool := t.TempDir()
	s, err := trajectory.OpenInflux(ctx, l.URL(), spool, trajectory.WithDatabase(freshDB()),
		trajectory.WithFlushInterval(time.Hour), trajectory.WithBatchSize(1000), trajectory.WithSegmentSize(4<<10))
	require.NoError(t, err)
	g := newGen("ns/journal", t0)
	for ep := range 20 {
		for _, st := range g.episode(int64(ep), rewards(10, 1), true) {
			require.NoError(t, s.Append(ctx, st))
		}
	}
	assert.Greater(t, len(segments(t, spool, "journal-*.log")), 2, "200 steps take several 4 KiB segments")
	require.NoError(t, s.Flush(ctx))
	left := segments(t, spool, "journal-*.log")
	require.Len(t, left, 1, "delivered segments are removed")
	fi, err := os.Stat(left[0])
	require.NoError(t, err)
	assert.Equal(t, int64(8), fi.Size(), "the current segment is emptied to its header")
	require.NoError(t, s.Close())
	assert.Empty(t, segments(t, spool, "journal-*.log"), "Close removes an empty journal")
}
