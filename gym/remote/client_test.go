package remote

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// simEnv is a noisy simulated application with a wavy load and short
// episodes, so that seeds, truncation and carrying on after it all show.
func simEnv(t testing.TB) *sim.AppEnv {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	shape := make([]float64, 200)
	for i := range shape {
		shape[i] = 1 + 0.6*math.Sin(float64(i)/7)
	}
	app := sim.App{
		Name:    "remote-test",
		Chain:   []segments.Spec{{Name: "compress", Size: 131072}, {Name: "matMul", Size: 100}},
		Speed:   1,
		Noise:   0.1,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.05},
		Load:    sim.Load{Shape: shape, Offset: 13, Scale: 60},
		Initial: sim.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * gym.MiB},
	}
	env, err := sim.NewEnv(prof, app, sim.WithEpisode(10))
	require.NoError(t, err)
	return env
}

// plan is a seed and a sequence of actions, some outside the bounds.
type plan struct {
	Seed    uint64      `json:"seed"`
	Actions [][]float64 `json:"actions"`
}

func makePlan(space gym.Space, seed uint64, n int) plan {
	rng := rand.New(rand.NewPCG(seed, 99))
	p := plan{Seed: seed}
	for range n {
		a := make([]float64, space.Dim())
		for i := range a {
			lo, hi := space.Low[i], space.High[i]
			a[i] = lo - 0.1*(hi-lo) + rng.Float64()*1.2*(hi-lo) // a little outside too
		}
		p.Actions = append(p.Actions, a)
	}
	return p
}

// trajectory is what driving an environment through a plan gives.
type trajectory struct {
	Obs       [][]float64 `json:"obs"`
	Rewards   []float64   `json:"rewards"`
	Truncated []bool      `json:"truncated"`
	Infos     []gym.Info  `json:"-"`
}

func drive(t *testing.T, env gym.Env, p plan) trajectory {
	t.Helper()
	ctx := context.Background()
	obs, info, err := env.Reset(ctx, p.Seed)
	require.NoError(t, err)
	tr := trajectory{Obs: [][]float64{obs}, Infos: []gym.Info{info}}
	for _, a := range p.Actions {
		obs, r, term, trunc, info, err := env.Step(ctx, a)
		require.NoError(t, err)
		require.False(t, term)
		tr.Obs = append(tr.Obs, obs)
		tr.Rewards = append(tr.Rewards, r)
		tr.Truncated = append(tr.Truncated, trunc)
		tr.Infos = append(tr.Infos, info)
	}
	return tr
}

// requireBitIdentical compares float slices bit for bit.
func requireBitIdentical(t *testing.T, want, got []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%s[%d]: want %v, got %v", what, i, want[i], got[i])
	}
}

func requireSameTrajectory(t *testing.T, want, got trajectory) {
	t.Helper()
	require.Len(t, got.Obs, len(want.Obs))
	for i := range want.Obs {
		requireBitIdentical(t, want.Obs[i], got.Obs[i], "obs of step "+strconv.Itoa(i))
	}
	requireBitIdentical(t, want.Rewards, got.Rewards, "rewards")
	require.Equal(t, want.Truncated, got.Truncated)
	if want.Infos != nil && got.Infos != nil {
		require.Equal(t, want.Infos, got.Infos) // no NaN in the simulator's metrics
	}
}

// TestClientMatchesSimulator drives the simulator directly and through the
// server and the Go client with the same seed and actions: observations,
// rewards and infos agree bit for bit.
func TestClientMatchesSimulator(t *testing.T) {
	direct := simEnv(t)
	p := makePlan(direct.ActionSpace(), 7, 25) // crosses two episode ends
	want := drive(t, direct, p)
	require.Contains(t, want.Truncated, true)

	s, err := NewServer(map[string]gym.Env{"app": simEnv(t)}, testToken)
	require.NoError(t, err)
	c, err := Dial(context.Background(), serve(t, s), "app", testToken)
	require.NoError(t, err)
	assert.Equal(t, direct.ObservationSpace(), c.ObservationSpace())
	assert.Equal(t, direct.ActionSpace(), c.ActionSpace())
	assert.Equal(t, "app", c.Name())
	got := drive(t, c, p)
	assert.Equal(t, p.Seed, c.LastSeed())
	requireSameTrajectory(t, want, got)

	// Another seed gives another trajectory; the same seed again the same.
	other := drive(t, c, plan{Seed: 8, Actions: p.Actions})
	assert.NotEqual(t, want.Rewards, other.Rewards)
	requireSameTrajectory(t, want, drive(t, c, p))
}

func TestClientErrors(t *testing.T) {
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken)
	require.NoError(t, err)
	url := serve(t, s)
	ctx := context.Background()

	for _, tc := range []struct {
		name, url, env, token string
		status                int
		want                  string
	}{
		{"bad URL", "127.0.0.1:1", "a", testToken, 0, "want http://host:port"},
		{"bad name", url, "a/b", testToken, 0, `environment name "a/b"`},
		{"bad token", url, "a", "wrong", 401, "remote: spaces a: 401 Unauthorized: invalid token"},
		{"no token", url, "a", "", 401, "missing Authorization header"},
		{"token with space", url, "a", "a b", 0, "token has a space"},
		{"unknown env", url, "zzz", testToken, 404, `unknown environment "zzz"; this server has "a"`},
		{"unreachable", "http://127.0.0.1:1", "a", testToken, 0, "remote: spaces a: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(ctx, tc.url, tc.env, tc.token)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.status, StatusOf(err))
		})
	}

	c, err := Dial(ctx, url+"/", "a", testToken, WithHTTPClient(&http.Client{}))
	require.NoError(t, err)
	_, _, _, _, _, err = c.Step(ctx, []float64{1, 1, 1})
	assert.Equal(t, http.StatusConflict, StatusOf(err))
	assert.ErrorContains(t, err, `remote: step a: 409 Conflict: environment "a" has not been reset`)
	_, _, err = c.Reset(ctx, 5)
	require.NoError(t, err)
	_, _, _, _, _, err = c.Step(ctx, []float64{1, 1})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Error{Op: "step", Env: "a", Status: 400, Message: "action has 2 values, the action space has 3 (replicas, cpu_cores, memory_bytes)"}, *e)
	_, _, _, _, _, err = c.Step(ctx, []float64{1, math.Inf(1), 1})
	assert.ErrorContains(t, err, "action[1] (cpu_cores) is +Inf; want a finite number")
	obs, r, _, _, info, err := c.Step(ctx, []float64{4, 1, 1})
	require.NoError(t, err)
	assert.Equal(t, []float64{5, 1}, obs)
	assert.Equal(t, 4.0, r)
	assert.Equal(t, 4, info.Metrics.Replicas)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = c.Reset(cctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, StatusOf(err))
}
