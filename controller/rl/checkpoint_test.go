package rl_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

type ckptMeta struct {
	Epsilon float64 `json:"epsilon"`
	Steps   int     `json:"steps"`
}

// sampleCheckpoint returns a checkpoint with an actor, its Adam state after
// a few steps and metadata, and the network it came from.
func sampleCheckpoint(t *testing.T) (*rl.Checkpoint, *rl.MLP, *rl.Adam) {
	t.Helper()
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{3, 5, 2}, Hidden: rl.ReLU, Output: rl.Tanh}, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	opt := rl.NewAdam(1e-3)
	for i := range m.Params().Grads() {
		m.Params().Grads()[i] = float64(i%7) - 3
	}
	opt.Step(m.Params())
	opt.Step(m.Params())
	c := rl.NewCheckpoint()
	c.PutParams("actor", m.Params())
	c.PutAdam("actor-adam", opt)
	c.Put("empty", nil)
	require.NoError(t, c.SetMeta(ckptMeta{Epsilon: 0.25, Steps: 7}))
	return c, m, opt
}

func writeSample(t *testing.T) (string, *rl.MLP, *rl.Adam) {
	t.Helper()
	c, m, opt := sampleCheckpoint(t)
	path := filepath.Join(t.TempDir(), "agent.ckpt")
	require.NoError(t, rl.WriteCheckpoint(path, c))
	return path, m, opt
}

func TestCheckpointRoundTrip(t *testing.T) {
	path, m, opt := writeSample(t)
	c, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"actor", "actor-adam/m", "actor-adam/v", "actor-adam/t", "empty"}, c.Names())

	m2 := m.Clone()
	clear(m2.Params().Values())
	require.NoError(t, c.LoadParams("actor", m2.Params()))
	assert.Equal(t, m.Params().Values(), m2.Params().Values())

	// The restored optimiser continues exactly like the original.
	opt2 := rl.NewAdam(1e-3)
	require.NoError(t, c.LoadAdam("actor-adam", opt2, m2.Params()))
	assert.Equal(t, opt.Steps(), opt2.Steps())
	copy(m2.Params().Grads(), m.Params().Grads())
	opt.Step(m.Params())
	opt2.Step(m2.Params())
	assert.Equal(t, m.Params().Values(), m2.Params().Values())

	var meta ckptMeta
	require.NoError(t, c.Meta(&meta))
	assert.Equal(t, ckptMeta{Epsilon: 0.25, Steps: 7}, meta)
	v, ok := c.Get("empty")
	assert.True(t, ok)
	assert.Empty(t, v)
}

func TestCheckpointRestoreAllOrNone(t *testing.T) {
	path, m, opt := writeSample(t)
	c, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)

	// An entry that fails (missing) leaves every destination unchanged,
	// also those listed before it.
	m2, opt2 := m.Clone(), rl.NewAdam(1e-3)
	clear(m2.Params().Values())
	other := rl.NewParams(3)
	err = c.Restore(rl.Restore{Name: "actor", Params: m2.Params(), AdamName: "actor-adam", Adam: opt2},
		rl.Restore{Name: "critic", Params: other})
	require.ErrorContains(t, err, `no entry "critic"`)
	assert.Equal(t, make([]float64, m.Params().Len()), m2.Params().Values())
	assert.Zero(t, opt2.Steps())

	// All present: values and optimiser state restored.
	require.NoError(t, c.Restore(rl.Restore{Name: "actor", Params: m2.Params(), AdamName: "actor-adam", Adam: opt2}))
	assert.Equal(t, m.Params().Values(), m2.Params().Values())
	assert.Equal(t, opt.Steps(), opt2.Steps())
	copy(m2.Params().Grads(), m.Params().Grads())
	opt.Step(m.Params())
	opt2.Step(m2.Params())
	assert.Equal(t, m.Params().Values(), m2.Params().Values(), "the restored optimiser continues like the original")
}

func TestCheckpointFreshAdam(t *testing.T) {
	c := rl.NewCheckpoint()
	c.PutAdam("opt", rl.NewAdam(1e-3))
	data, err := c.MarshalBinary()
	require.NoError(t, err)
	c2, err := rl.UnmarshalCheckpoint(data)
	require.NoError(t, err)
	p := rl.NewParams(4)
	opt := rl.NewAdam(1e-3)
	require.NoError(t, c2.LoadAdam("opt", opt, p))
	assert.Zero(t, opt.Steps())
	assert.NotPanics(t, func() { opt.Step(p) })
}

func TestCheckpointCorrupt(t *testing.T) {
	c, _, _ := sampleCheckpoint(t)
	good, err := c.MarshalBinary()
	require.NoError(t, err)
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"wrong magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"wrong version", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 9); return b }), "version 9 not supported"},
		{"header only", good[:12], "truncated"},
		{"truncated", good[:len(good)-20], "checksum mismatch"},
		{"missing checksum", good[:len(good)-4], "checksum mismatch"},
		{"flipped value byte", mutate(func(b []byte) []byte { b[len(b)-30] ^= 0x10; return b }), "checksum mismatch"},
		{"flipped checksum byte", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rl.UnmarshalCheckpoint(tt.data)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// Every single-byte flip anywhere in the file is detected.
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 0x01
		_, err := rl.UnmarshalCheckpoint(b)
		require.Error(t, err, "flip at byte %d", i)
	}
	// So is every truncation.
	for n := range len(good) {
		_, err := rl.UnmarshalCheckpoint(good[:n])
		require.Error(t, err, "truncated to %d bytes", n)
	}
}

func TestCheckpointFileErrors(t *testing.T) {
	path, _, _ := writeSample(t)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600))
	_, err = rl.ReadCheckpoint(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)

	_, err = rl.ReadCheckpoint(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestCheckpointShapeMismatch(t *testing.T) {
	c, m, opt := sampleCheckpoint(t)
	n := m.Params().Len()
	err := c.LoadParams("actor", rl.NewParams(n+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf(`"actor" has %d values, Params has %d`, n, n+1))

	err = c.LoadParams("critic", rl.NewParams(n))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no entry "critic"`)

	err = c.LoadAdam("actor-adam", opt, rl.NewParams(n-1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf(`"actor-adam" has %d values, Params has %d`, n, n-1))

	require.Error(t, rl.NewCheckpoint().Meta(&ckptMeta{}))
}

func TestCheckpointBadName(t *testing.T) {
	c := rl.NewCheckpoint()
	c.Put("", []float64{1})
	_, err := c.MarshalBinary()
	require.Error(t, err)
	require.Error(t, rl.WriteCheckpoint(filepath.Join(t.TempDir(), "x"), c))
}

func TestCheckpointOverwrite(t *testing.T) {
	path, _, _ := writeSample(t)
	c := rl.NewCheckpoint()
	c.Put("x", []float64{1, 2, 3})
	c.Put("x", []float64{4}) // replaces, keeps one entry
	require.NoError(t, rl.WriteCheckpoint(path, c))
	got, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, got.Names())
	v, _ := got.Get("x")
	assert.Equal(t, []float64{4}, v)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary files left behind")
}

func ExampleWriteCheckpoint() {
	net, _ := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 4, 1}, Hidden: rl.ReLU, Output: rl.Identity}, rand.New(rand.NewPCG(1, 1)))
	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "net.ckpt")

	c := rl.NewCheckpoint()
	c.PutParams("critic", net.Params())
	_ = c.SetMeta(map[string]int{"steps": 10})
	if err := rl.WriteCheckpoint(path, c); err != nil {
		fmt.Println(err)
		return
	}
	back, _ := rl.ReadCheckpoint(path)
	fmt.Println(back.Names(), back.LoadParams("critic", rl.NewParams(net.Params().Len())))
	fmt.Println(back.LoadParams("critic", rl.NewParams(3)))
	// Output:
	// [critic] <nil>
	// rl: checkpoint entry "critic" has 17 values, Params has 3
}
