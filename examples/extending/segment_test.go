package extending_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// primeCount is a segment of our own: it counts the primes below its size
// (in thousands) with a sieve of Eratosthenes, a CPU-bound step that none
// of the 16 segments is.
type primeCount struct{ n int }

func (p primeCount) Run(ctx context.Context) (segments.Result, error) {
	if err := ctx.Err(); err != nil {
		return segments.Result{}, err
	}
	composite := make([]bool, p.n)
	count := 0
	for i := 2; i < p.n; i++ {
		if composite[i] {
			continue
		}
		count++
		for j := i * i; j < p.n; j += i {
			composite[j] = true
		}
	}
	return segments.Result{Items: int64(p.n), Ops: int64(count), Checksum: uint64(count)}, nil
}

func (primeCount) Close(context.Context) error { return nil }

// Step 1: register the segment (an init function of your package).
func init() {
	segments.Register(segments.Info{
		Name:  "primeCount",
		Unit:  "thousands",
		Sizes: []int{50, 100, 200},
		New: func(_ context.Context, size int, _ segments.Env) (segments.Instance, error) {
			if size > 100_000 {
				return nil, fmt.Errorf("primeCount: %d thousand is more than the 100 million this segment sieves", size)
			}
			return primeCount{n: size * 1000}, nil
		},
	})
}

// TestSegmentFromOutside registers a segment, calibrates it (step 2: the
// profile's entries for it), and finds it in a generated pool (step 3),
// running on the simulator (step 4) and in the workload server (step 5).
func TestSegmentFromOutside(t *testing.T) {
	ctx := context.Background()
	env := segments.Env{Dir: t.TempDir(), Seed: 1}

	// Step 2: measure it as `aware workload calibrate` would, briefly, and
	// add its entries to the profile.
	targets, err := calibration.Targets([]string{"primeCount"}, env)
	require.NoError(t, err)
	require.Len(t, targets, 3)
	opts := calibration.Options{Repeats: 1, Warmup: 1, MinRequests: 4, MinDuration: 20 * time.Millisecond, MaxRequests: 40, Rounds: 2, Concurrency: 2}
	measured, err := calibration.Run(ctx, targets, opts, calibration.InProcess(env, opts), nil)
	require.NoError(t, err)
	prof, err := calibration.Default()
	require.NoError(t, err)
	prof.Entries = append(prof.Entries, measured.Entries...)
	prof.Sort()
	e50, ok := prof.Lookup("primeCount", 50)
	require.True(t, ok)
	e200, _ := prof.Lookup("primeCount", 200)
	assert.Greater(t, e200.CPUSeconds, e50.CPUSeconds, "a larger sieve costs more CPU")

	// Step 3: generate a pool with that profile: some applications use it.
	gopts := generator.DefaultOptions()
	gopts.Apps = 200
	apps, err := generator.Generate(gopts, prof)
	require.NoError(t, err)
	var mine []generator.App
	for _, a := range apps {
		if slices.ContainsFunc(a.Spec.Segments, func(s segments.Spec) bool { return s.Name == "primeCount" }) {
			mine = append(mine, a)
		}
	}
	require.NotEmpty(t, mine, "no generated application uses the new segment")

	// Step 4: one of them on the simulator.
	shapes, err := generator.LoadShapes("", 30*time.Second, 1)
	require.NoError(t, err)
	simApps, err := generator.SimApps(mine[:1], shapes)
	require.NoError(t, err)
	e, err := sim.NewEnv(prof, simApps[0])
	require.NoError(t, err)
	_, _, err = e.Reset(ctx, 1)
	require.NoError(t, err)
	start := simApps[0].Initial
	for range 5 {
		_, r, _, _, info, err := e.Step(ctx, []float64{float64(start.Replicas), start.CPU, start.Memory})
		require.NoError(t, err)
		assert.False(t, math.IsNaN(r))
		assert.Positive(t, info.Metrics.CPUUsage, "the application's segments use CPU")
	}

	// Step 5: an application whose other segments need no database or
	// object store, served for real.
	i := slices.IndexFunc(mine, func(a generator.App) bool {
		return !slices.ContainsFunc(a.Spec.Segments, func(s segments.Spec) bool {
			info, _ := segments.Lookup(s.Name)
			return slices.Contains(info.Needs, "db") || slices.Contains(info.Needs, "objects")
		})
	})
	require.GreaterOrEqual(t, i, 0, "every application with the new segment also needs a service")
	a := mine[i]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := server.New(server.Config{Addr: ln.Addr().String(), App: a.Name()}, server.ChainSetup(a.Spec, env), server.WithListener(ln))
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("server stopped before it was ready: %v", err)
	}
	resp, err := http.Post("http://"+ln.Addr().String()+"/invoke", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
}
