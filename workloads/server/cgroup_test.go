package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{in: "max 100000", want: 0},
		{in: "200000 100000", want: 2},
		{in: "150000 100000\n", want: 1.5},
		{in: "50000 100000", want: 0.5},
		{in: "", wantErr: "want two fields"},
		{in: "max", wantErr: "want two fields"},
		{in: "max 0", wantErr: "period"},
		{in: "x 100000", wantErr: "quota"},
		{in: "0 100000", wantErr: "quota"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCPUMax(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}
}

func TestReadCPULimit(t *testing.T) {
	write := func(t *testing.T, path, content string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	t.Run("own cgroup v2", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "self"), "0::/kubepods/pod1\n")
		write(t, filepath.Join(dir, "fs/kubepods/pod1/cpu.max"), "250000 100000\n")
		write(t, filepath.Join(dir, "fs/cpu.max"), "max 100000\n")
		lim, err := readCPULimit(filepath.Join(dir, "self"), filepath.Join(dir, "fs"))
		require.NoError(t, err)
		assert.Equal(t, 2.5, lim.Cores)
		assert.Equal(t, "2.5 cores", lim.String())
		assert.Equal(t, "250000 100000", lim.Raw)
	})
	t.Run("root cgroup v2 unlimited", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "fs/cpu.max"), "max 100000\n")
		lim, err := readCPULimit(filepath.Join(dir, "missing"), filepath.Join(dir, "fs"))
		require.NoError(t, err)
		assert.Equal(t, "unlimited", lim.String())
	})
	t.Run("cgroup v1", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "fs/cpu/cpu.cfs_quota_us"), "100000\n")
		write(t, filepath.Join(dir, "fs/cpu/cpu.cfs_period_us"), "100000\n")
		lim, err := readCPULimit(filepath.Join(dir, "missing"), filepath.Join(dir, "fs"))
		require.NoError(t, err)
		assert.Equal(t, 1.0, lim.Cores)
	})
	t.Run("cgroup v1 unlimited", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "fs/cpu/cpu.cfs_quota_us"), "-1\n")
		write(t, filepath.Join(dir, "fs/cpu/cpu.cfs_period_us"), "100000\n")
		lim, err := readCPULimit(filepath.Join(dir, "missing"), filepath.Join(dir, "fs"))
		require.NoError(t, err)
		assert.Zero(t, lim.Cores)
	})
	t.Run("malformed names the file", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "fs/cpu.max"), "bogus\n")
		_, err := readCPULimit(filepath.Join(dir, "missing"), filepath.Join(dir, "fs"))
		require.ErrorContains(t, err, filepath.Join(dir, "fs/cpu.max"))
	})
	t.Run("nothing readable", func(t *testing.T) {
		_, err := readCPULimit(filepath.Join(t.TempDir(), "missing"), t.TempDir())
		require.ErrorContains(t, err, "no cgroup")
	})
}
