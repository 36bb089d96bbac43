package segments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	for _, size := range cpuSizes(t, "readFile") {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			env := cpuEnv(t, 21)
			env.Instance = 2
			inst, err := New(context.Background(), Spec{Name: "readFile", Size: size}, env)
			require.NoError(t, err)
			s := inst.(readFileSeg)
			assert.Equal(t, env.Dir, filepath.Dir(s.path))
			assert.Contains(t, filepath.Base(s.path), "readFile-i2-s21-")

			content := genBytes(inputRand(env, "readFile"), size)
			onDisk, err := os.ReadFile(s.path)
			require.NoError(t, err)
			require.Equal(t, content, onDisk)

			r, err := inst.Run(context.Background())
			require.NoError(t, err)
			assert.Equal(t, digest(content), r.Checksum)
			assert.EqualValues(t, size, r.BytesIn)

			require.NoError(t, inst.Close(context.Background()))
			assert.NoFileExists(t, s.path)
			require.NoError(t, inst.Close(context.Background()), "closing twice is fine")
			_, err = inst.Run(context.Background())
			assert.ErrorContains(t, err, "readFile")
		})
	}
}

func TestReadFileSameSeedInstancesDoNotCollide(t *testing.T) {
	env := cpuEnv(t, 1)
	a := cpuNew(t, "readFile", 1024, env).(readFileSeg)
	b := cpuNew(t, "readFile", 1024, env).(readFileSeg)
	assert.NotEqual(t, a.path, b.path)
	require.NoError(t, a.Close(context.Background()))
	_, err := b.Run(context.Background())
	require.NoError(t, err, "closing one instance must not remove the other's file")
}

func TestReadFileDetectsChanges(t *testing.T) {
	env := cpuEnv(t, 1)
	inst := cpuNew(t, "readFile", 4096, env).(readFileSeg)
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"truncated", make([]byte, 100), "read 100 bytes, want 4096"},
		{"rewritten", make([]byte, 4096), "checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(inst.path, tc.content, 0o600))
			_, err := inst.Run(context.Background())
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestWriteFile(t *testing.T) {
	for _, size := range cpuSizes(t, "writeFile") {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			env := cpuEnv(t, 4)
			s, err := newWriteFileSeg(size, env)
			require.NoError(t, err)
			content := genBytes(inputRand(env, "writeFile"), size)
			var mu sync.Mutex
			seen := map[string]bool{}
			s.afterWrite = func(path string) error {
				got, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, env.Dir, filepath.Dir(path))
				assert.Equal(t, content, got)
				seen[path] = true
				return nil
			}
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					r, err := s.Run(context.Background())
					assert.NoError(t, err)
					assert.EqualValues(t, size, r.BytesOut)
					assert.Equal(t, digest(content), r.Checksum)
				})
			}
			wg.Wait()
			assert.Len(t, seen, 3, "each request writes its own file")
			left, err := os.ReadDir(env.Dir)
			require.NoError(t, err)
			assert.Empty(t, left, "written files are removed")
		})
	}
}

func TestWriteFileRemovesFileOnError(t *testing.T) {
	env := cpuEnv(t, 1)
	s, err := newWriteFileSeg(10, env)
	require.NoError(t, err)
	s.afterWrite = func(string) error { return os.ErrPermission }
	_, err = s.Run(context.Background())
	require.ErrorIs(t, err, os.ErrPermission)
	left, err := os.ReadDir(env.Dir)
	require.NoError(t, err)
	assert.Empty(t, left)
}

func TestFileSegmentsNeedADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, name := range []string{"readFile", "writeFile"} {
		for _, tc := range []struct{ dir, want string }{
			{"", "needs a scratch directory"},
			{filepath.Join(t.TempDir(), "missing"), "no such file"},
			{file, "not a directory"},
		} {
			t.Run(name+"/"+tc.want, func(t *testing.T) {
				_, err := New(context.Background(), Spec{Name: name, Size: 10}, Env{Dir: tc.dir})
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				assert.Contains(t, err.Error(), name)
			})
		}
	}
}
