package segments

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests common to the CPU and file segments.

var cpuSegmentNames = []string{
	"compress", "decompress", "floatOperations", "imageCompress", "imageResize",
	"imageRotate", "json2yaml", "matMul", "readFile", "writeFile",
}

// cpuEnv returns an environment with a fresh scratch directory.
func cpuEnv(t testing.TB, seed int64) Env {
	t.Helper()
	return Env{Dir: t.TempDir(), Seed: seed}
}

// cpuNew prepares a segment through New and closes it when the test ends.
func cpuNew(t testing.TB, name string, size int, env Env) Instance {
	t.Helper()
	inst, err := New(context.Background(), Spec{Name: name, Size: size}, env)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, inst.Close(context.Background())) })
	return inst
}

// cpuRun prepares and runs a segment once.
func cpuRun(t testing.TB, name string, size int, env Env) Result {
	t.Helper()
	res, err := cpuNew(t, name, size, env).Run(context.Background())
	require.NoError(t, err)
	return res
}

// cpuSizes returns the sizes to test: all of them, or the two smallest in
// -short mode.
func cpuSizes(t *testing.T, name string) []int {
	info, ok := Lookup(name)
	require.True(t, ok, name)
	if testing.Short() {
		return info.Sizes[:min(2, len(info.Sizes))]
	}
	return info.Sizes
}

func TestCPUSegmentsRegistered(t *testing.T) {
	names := Names()
	for _, name := range cpuSegmentNames {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, names, name)
			info, ok := Lookup(name)
			require.True(t, ok)
			assert.Equal(t, name, info.Name)
			assert.NotEmpty(t, info.Unit)
			assert.NotNil(t, info.New)
			require.NotEmpty(t, info.Sizes)
			assert.True(t, slices.IsSorted(info.Sizes), "sizes %v not ascending", info.Sizes)
			assert.Positive(t, info.Sizes[0])
			assert.NotContains(t, info.Needs, "objects")
			assert.NotContains(t, info.Needs, "db")
		})
	}
}

func TestCPUSegmentsRejectBadSizes(t *testing.T) {
	tooBig := map[string]int{
		"compress": maxPayloadBytes + 1, "decompress": maxPayloadBytes + 1,
		"floatOperations": maxFloatOps + 1, "imageCompress": maxImageSide + 1,
		"imageResize": maxImageSide + 1, "imageRotate": maxImageSide + 1,
		"json2yaml": maxJSONBytes + 1, "matMul": maxMatrixSide + 1,
		"readFile": maxPayloadBytes + 1, "writeFile": maxPayloadBytes + 1,
	}
	for _, name := range cpuSegmentNames {
		for _, tc := range []struct {
			size int
			want string
		}{
			{0, "must be positive"},
			{-1, "must be positive"},
			{tooBig[name], "exceeds the maximum"},
		} {
			t.Run(fmt.Sprintf("%s/size=%d", name, tc.size), func(t *testing.T) {
				_, err := New(context.Background(), Spec{Name: name, Size: tc.size}, cpuEnv(t, 1))
				require.Error(t, err)
				assert.Contains(t, err.Error(), name)
				assert.Contains(t, err.Error(), tc.want)
			})
		}
	}
}

// cpuExpect checks the counts one Run reports for a size.
var cpuExpect = map[string]func(t *testing.T, size int, r Result){
	"compress": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.BytesIn)
		assert.Positive(t, r.BytesOut)
		assert.Less(t, r.BytesOut, r.BytesIn/2, "lorem text should compress well")
	},
	"decompress": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.BytesOut)
		assert.Positive(t, r.BytesIn)
		assert.Less(t, r.BytesIn, r.BytesOut/2)
	},
	"floatOperations": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.Ops)
		assert.EqualValues(t, size, r.Items)
	},
	"imageCompress": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size*size, r.Items)
		assert.Positive(t, r.BytesIn)
		assert.Positive(t, r.BytesOut)
	},
	"imageResize": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, (size/2)*(size/2), r.Items)
		assert.Positive(t, r.BytesOut)
	},
	"imageRotate": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size*(size*3/4), r.Items)
		assert.Positive(t, r.BytesOut)
	},
	"json2yaml": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.BytesIn)
		assert.Positive(t, r.BytesOut)
		assert.Greater(t, r.Items, int64(size/100), "expected nested values")
	},
	"matMul": func(t *testing.T, size int, r Result) {
		n := int64(size)
		assert.Equal(t, 2*n*n*n, r.Ops)
		assert.Equal(t, n*n, r.Items)
	},
	"readFile": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.BytesIn)
	},
	"writeFile": func(t *testing.T, size int, r Result) {
		assert.EqualValues(t, size, r.BytesOut)
	},
}

func TestCPUSegmentsAllSizes(t *testing.T) {
	for _, name := range cpuSegmentNames {
		check, ok := cpuExpect[name]
		require.True(t, ok, "no expectations for %s", name)
		for _, size := range cpuSizes(t, name) {
			t.Run(fmt.Sprintf("%s/size=%d", name, size), func(t *testing.T) {
				r := cpuRun(t, name, size, cpuEnv(t, 42))
				assert.NotZero(t, r.Checksum)
				check(t, size, r)
			})
		}
	}
}

func TestCPUSegmentsDeterministic(t *testing.T) {
	for _, name := range cpuSegmentNames {
		size := cpuSizes(t, name)[0]
		t.Run(name, func(t *testing.T) {
			a := cpuRun(t, name, size, cpuEnv(t, 7))
			b := cpuRun(t, name, size, cpuEnv(t, 7))
			assert.Equal(t, a, b, "same seed must give the same result")
			other := cpuEnv(t, 8)
			c := cpuRun(t, name, size, other)
			other.Seed, other.Instance = 7, 1
			d := cpuRun(t, name, size, other)
			if name == "floatOperations" { // no input data
				assert.Equal(t, a, c)
				return
			}
			assert.NotEqual(t, a.Checksum, c.Checksum, "another seed must give other inputs")
			assert.NotEqual(t, a.Checksum, d.Checksum, "another instance must give other inputs")
		})
	}
}

func TestCPUSegmentsConcurrentRun(t *testing.T) {
	const workers, runs = 4, 3
	for _, name := range cpuSegmentNames {
		size := cpuSizes(t, name)[0]
		t.Run(name, func(t *testing.T) {
			inst := cpuNew(t, name, size, cpuEnv(t, 3))
			want, err := inst.Run(context.Background())
			require.NoError(t, err)
			var wg sync.WaitGroup
			results := make(chan Result, workers*runs)
			errs := make(chan error, workers*runs)
			for range workers {
				wg.Go(func() {
					for range runs {
						r, err := inst.Run(context.Background())
						if err != nil {
							errs <- err
							continue
						}
						results <- r
					}
				})
			}
			wg.Wait()
			close(results)
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			n := 0
			for r := range results {
				assert.Equal(t, want, r)
				n++
			}
			assert.Equal(t, workers*runs, n)
		})
	}
}

func TestCPUSegmentsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range cpuSegmentNames {
		t.Run(name, func(t *testing.T) {
			inst := cpuNew(t, name, cpuSizes(t, name)[0], cpuEnv(t, 1))
			_, err := inst.Run(ctx)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
}

func Example_matMul() {
	ctx := context.Background()
	inst, err := New(ctx, Spec{Name: "matMul", Size: 50}, Env{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = inst.Close(ctx) }()
	r, err := inst.Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cells:", r.Items, "flops:", r.Ops)
	// Output: cells: 2500 flops: 250000
}
