package cluster

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitStopped holds Pause to its promise: it returns only once every
// thread of the process has stopped, and names the threads otherwise.
func TestWaitStopped(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	err := waitStopped(pid, 50*time.Millisecond)
	require.Error(t, err, "a running process is not stopped")
	assert.Contains(t, err.Error(), "still run")

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.NoError(t, waitStopped(pid, 10*time.Second))
	threads, err := runningThreads(pid)
	require.NoError(t, err)
	assert.Empty(t, threads)

	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	assert.Eventually(t, func() bool {
		threads, err := runningThreads(pid)
		return err == nil && len(threads) == 1
	}, 10*time.Second, time.Millisecond, "running again after SIGCONT")

	_, err = runningThreads(1 << 30)
	assert.Error(t, err, "no such process")
}
