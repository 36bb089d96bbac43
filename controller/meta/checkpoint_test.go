package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// smallFLASH is a FLASH with a small network and two tasks of 2-value
// states and 1-value actions.
func smallFLASH(t *testing.T, seed uint64) *FLASH {
	t.Helper()
	e, err := NewEmbedder(Config{Features: 4, Hidden: 5, Layers: 2, FC: 6, Embed: 3, Dropout: 0.05}, rnd(seed))
	require.NoError(t, err)
	opts := DefaultOptions(5)
	opts.M, opts.Capacity = 3, 4
	f, err := NewFLASH(e, opts)
	require.NoError(t, err)
	for _, n := range []string{"a", "b"} {
		require.NoError(t, f.Register(Task{Name: n, StateDim: 2, ActionDim: 1}))
	}
	return f
}

// episode inserts one episode of task into f and returns the states,
// actions and rewards inserted.
func insertEpisode(t *testing.T, f *FLASH, task string, k int) {
	t.Helper()
	r := rnd(uint64(100 + k))
	var s, a [][]float64
	var rw []float64
	for range 5 {
		s = append(s, randSlice(2, r))
		a = append(a, randSlice(1, r))
		rw = append(rw, r.Float64())
	}
	require.NoError(t, f.Insert(task, s, a, rw))
}

func TestCheckpointResumesTraining(t *testing.T) {
	// Two runs of the same joint training: one straight through, one saved
	// and loaded into a fresh FLASH (another seed's weights) halfway. Both
	// must end with the same embeddings.
	train := func(f *FLASH, from, to int) {
		for k := from; k < to; k++ {
			for _, task := range []string{"a", "b"} {
				insertEpisode(t, f, task, 2*k+len(task))
				e, err := f.Embedding(nil, task)
				require.NoError(t, err)
				require.NoError(t, f.AddGrad(task, []float64{e[0] + 1, -1, 0.5}))
			}
		}
	}
	straight := smallFLASH(t, 1)
	straight.SetMetaUpdates(true)
	straight.emb.SetTraining(false) // dropout masks are not part of a checkpoint
	train(straight, 0, 6)

	half := smallFLASH(t, 1)
	half.SetMetaUpdates(true)
	half.emb.SetTraining(false)
	train(half, 0, 3)
	path := filepath.Join(t.TempDir(), "meta.ckpt")
	require.NoError(t, half.Save(path, map[string]int{"round": 3}))

	resumed := smallFLASH(t, 99)
	var user struct{ Round int }
	require.NoError(t, resumed.Load(path, &user))
	assert.Equal(t, 3, user.Round)
	assert.True(t, resumed.MetaUpdates())
	resumed.emb.SetTraining(false)
	train(resumed, 3, 6)

	straight.SetMetaUpdates(false)
	resumed.SetMetaUpdates(false)
	for _, task := range []string{"a", "b"} {
		want, err := straight.Embedding(nil, task)
		require.NoError(t, err)
		got, err := resumed.Embedding(nil, task)
		require.NoError(t, err)
		assert.InDeltaSlice(t, want, got, 1e-12, "task %s", task)
		assert.NotEqual(t, []float64{0, 0, 0}, got)
	}
}

func TestLoadRefusesAndKeepsState(t *testing.T) {
	f := smallFLASH(t, 1)
	insertEpisode(t, f, "a", 1)
	before, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	dir := t.TempDir()

	other, err := NewEmbedder(Config{Features: 4, Hidden: 6, Layers: 2, FC: 6, Embed: 3}, rnd(2))
	require.NoError(t, err)
	g, err := NewFLASH(other, f.opts)
	require.NoError(t, err)
	wide := filepath.Join(dir, "wide.ckpt")
	require.NoError(t, g.Save(wide, nil))
	assert.ErrorContains(t, f.Load(wide, nil), "network")

	corrupt := filepath.Join(dir, "corrupt.ckpt")
	require.NoError(t, f.Save(corrupt, nil))
	b, err := os.ReadFile(corrupt)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(corrupt, b, 0o644))
	assert.Error(t, f.Load(corrupt, nil))
	assert.ErrorContains(t, f.Load(filepath.Join(dir, "missing.ckpt"), nil), "missing.ckpt")

	after, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused checkpoint changes nothing")
}

// TestCheckpointOfManyTasks: a meta-training run over the whole train
// split (800 applications, 32 buffered trajectories each) checkpoints and
// resumes: the trajectories' heads are entries, not JSON metadata, which
// outgrew its 1 MiB limit at 800 tasks of 19 trajectories.
func TestCheckpointOfManyTasks(t *testing.T) {
	e, err := NewEmbedder(Config{Features: 4, Hidden: 2, Layers: 1, FC: 2, Embed: 2}, rnd(1))
	require.NoError(t, err)
	opts := DefaultOptions(1)
	f, err := NewFLASH(e, opts)
	require.NoError(t, err)
	r := rnd(2)
	for i := range 800 {
		name := fmt.Sprintf("app-%04d-a-rather-long-application-name", i)
		require.NoError(t, f.Register(Task{Name: name, StateDim: 2, ActionDim: 1}))
		for range opts.Capacity {
			require.NoError(t, f.Insert(name, [][]float64{randSlice(2, r)}, [][]float64{randSlice(1, r)}, []float64{r.Float64()}))
		}
	}
	path := filepath.Join(t.TempDir(), "meta.ckpt")
	require.NoError(t, f.Save(path, nil))
	g, err := NewFLASH(e, opts)
	require.NoError(t, err)
	require.NoError(t, g.Load(path, nil))
	require.Len(t, g.tasks, 800)
	names := g.Tasks()
	require.Len(t, names, 800)
	assert.True(t, slices.IsSorted(names), "in name order")
	assert.Equal(t, "app-0000-a-rather-long-application-name", names[0])
	for name, want := range f.tasks {
		got := g.tasks[name]
		require.NotNil(t, got, name)
		assert.Equal(t, want.buf.items, got.buf.items, name)
		assert.Equal(t, want.buf.now, got.buf.now, name)
		assert.Equal(t, want.episodes, got.episodes, name)
	}
}

// TestLoadVersion1: a checkpoint of the first format (trajectory heads in
// the JSON metadata) still loads, as the full meta-training run's did.
func TestLoadVersion1(t *testing.T) {
	f := smallFLASH(t, 1)
	for k := range 3 {
		insertEpisode(t, f, "a", k)
	}
	insertEpisode(t, f, "b", 7)
	path := filepath.Join(t.TempDir(), "meta.ckpt")
	require.NoError(t, f.Save(path, nil))

	// Rewrite it as version 1 wrote it.
	c, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)
	var m flashMeta
	require.NoError(t, c.Meta(&m))
	m.Version = 1
	for i := range m.Tasks {
		st := &m.Tasks[i]
		heads, ok := c.Get("heads/" + st.Task.Name)
		require.True(t, ok)
		for j := range st.Trajectories {
			h := heads[headLen*j:]
			st.Items = append(st.Items, trajectoryHead{Steps: int(h[0]), Reward: h[1], Episode: int(h[2]), End: int(h[3])})
		}
		st.Trajectories = 0
	}
	require.NoError(t, c.SetMeta(m))
	v1 := filepath.Join(t.TempDir(), "v1.ckpt")
	require.NoError(t, rl.WriteCheckpoint(v1, c))

	g := smallFLASH(t, 2)
	require.NoError(t, g.Load(v1, nil))
	for name, want := range f.tasks {
		assert.Equal(t, want.buf.items, g.tasks[name].buf.items, name)
	}
	m.Version = 3
	require.NoError(t, c.SetMeta(m))
	require.NoError(t, rl.WriteCheckpoint(v1, c))
	assert.ErrorContains(t, g.Load(v1, nil), "version 3, this build reads 1 and 2")
}
