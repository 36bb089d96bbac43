package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envChild makes the test binary act as a workload server child process
// listening on the address it holds (see TestMain).
const envChild = "AWARE_SERVER_TEST_CHILD_ADDR"

func TestMain(m *testing.M) {
	if addr := os.Getenv(envChild); addr != "" {
		os.Exit(runTestChild(addr))
	}
	os.Exit(m.Run())
}

// runTestChild serves a fake app on addr until SIGTERM, like `aware
// workload serve`.
func runTestChild(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if os.Getenv("AWARE_SERVER_TEST_CHILD_FAIL") != "" {
		fmt.Fprintln(os.Stderr, "child: failing on purpose")
		return 3
	}
	s, err := New(Config{App: "child", Addr: addr}, setupOf(&fakeApp{}), WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err == nil {
		err = s.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func TestChildLifecycle(t *testing.T) {
	addr, err := FreeLoopbackAddr()
	require.NoError(t, err)
	t.Setenv(envChild, addr)
	logPath := filepath.Join(t.TempDir(), "server.log")
	c, err := StartChild(os.Args[0], nil, "http://"+addr, logPath)
	require.NoError(t, err)
	require.NoError(t, c.WaitReady(t.Context(), 30*time.Second))
	assert.False(t, c.Exited())

	resp, err := http.Post(c.URL()+"/invoke", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, c.Stop(10*time.Second), "SIGTERM must shut the server down cleanly")
	assert.True(t, c.Exited())
	assert.Contains(t, c.LogTail(), "workload server stopped")
	require.NoError(t, c.Stop(time.Second), "stopping twice is harmless")
}

func TestChildExitsBeforeReady(t *testing.T) {
	addr, err := FreeLoopbackAddr()
	require.NoError(t, err)
	t.Setenv(envChild, addr)
	t.Setenv("AWARE_SERVER_TEST_CHILD_FAIL", "1")
	c, err := StartChild(os.Args[0], nil, "http://"+addr, filepath.Join(t.TempDir(), "server.log"))
	require.NoError(t, err)
	err = c.WaitReady(t.Context(), 30*time.Second)
	require.ErrorContains(t, err, "exited before it was ready")
	assert.ErrorContains(t, err, "child: failing on purpose", "the error shows the server's log")
	assert.Error(t, c.Stop(time.Second), "a failed child reports its exit status")
}

func TestStartChildErrors(t *testing.T) {
	_, err := StartChild("/nonexistent/server", nil, "http://127.0.0.1:1", filepath.Join(t.TempDir(), "log"))
	assert.ErrorContains(t, err, "start workload server /nonexistent/server")
	_, err = StartChild(os.Args[0], nil, "http://127.0.0.1:1", "/nonexistent/dir/log")
	assert.ErrorContains(t, err, "server log")
}
