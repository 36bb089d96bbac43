package localproc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartAndExit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		wantErr bool
	}{
		{"clean", "exit 0", false},
		{"failing", "exit 3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(exec.Command("/bin/sh", "-c", tc.script), syscall.SIGKILL)
			require.NoError(t, err)
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("process did not exit")
			}
			assert.True(t, p.Exited())
			if tc.wantErr {
				assert.ErrorContains(t, p.Err(), "exit status 3")
			} else {
				assert.NoError(t, p.Err())
			}
			assert.ErrorContains(t, p.Stop(syscall.SIGTERM, time.Second), "had already exited")
		})
	}
}

func TestStartKeepsSysProcAttrAndSetsDeathSignal(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "10")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := Start(cmd, syscall.SIGTERM)
	require.NoError(t, err)
	defer p.Stop(syscall.SIGKILL, time.Second)
	assert.True(t, cmd.SysProcAttr.Setpgid)
	assert.Equal(t, syscall.SIGTERM, cmd.SysProcAttr.Pdeathsig)
	pgid, err := syscall.Getpgid(cmd.Process.Pid)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, pgid, "own process group")
	assert.False(t, p.Exited())
	assert.NoError(t, p.Err(), "no error while running")
}

func TestStartError(t *testing.T) {
	_, err := Start(exec.Command(filepath.Join(t.TempDir(), "missing")), syscall.SIGKILL)
	assert.ErrorContains(t, err, "start ")
}

func TestStopGracefulAndKilled(t *testing.T) {
	p, err := Start(exec.Command("/bin/sleep", "30"), syscall.SIGKILL)
	require.NoError(t, err)
	require.NoError(t, p.Stop(syscall.SIGTERM, 10*time.Second), "sleep exits on SIGTERM")
	assert.True(t, p.Exited())

	// A shell that ignores SIGTERM must be killed after the grace period.
	p, err = Start(exec.Command("/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"), syscall.SIGKILL)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // let the shell install its trap
	err = p.Stop(syscall.SIGTERM, 200*time.Millisecond)
	assert.ErrorContains(t, err, "did not exit within 200ms")
	assert.ErrorContains(t, err, "killed")
	assert.True(t, p.Exited())
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err, "the port is free")
	l.Close()
}

func TestTail(t *testing.T) {
	tl := &Tail{Max: 5}
	for _, s := range []string{"ab", "cdef", "gh"} {
		n, err := tl.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n)
	}
	assert.Equal(t, "defgh", tl.String())
}

func TestFileTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o644))
	for _, tc := range []struct {
		max, from int64
		want      string
	}{
		{4, 0, "6789"},
		{100, 0, "0123456789"},
		{100, 7, "789"},
		{2, 7, "89"},
	} {
		assert.Equal(t, tc.want, FileTail(path, tc.max, tc.from), "%+v", tc)
	}
	assert.Contains(t, FileTail(filepath.Join(t.TempDir(), "none"), 4, 0), "(no log:")
}
