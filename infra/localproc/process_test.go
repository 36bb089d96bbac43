package localproc

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitDone waits for p to exit, failing the test after 10s.
func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not exit", p.Path())
	}
}

// stopAtEnd makes sure p does not outlive the test.
func stopAtEnd(t *testing.T, p *Process) {
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.Stop(syscall.SIGKILL, 5*time.Second)
		}
	})
}

func TestStartAndExit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		wantErr string
	}{
		{"clean", "exit 0", ""},
		{"failing", "exit 3", "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("/bin/sh", []string{"-c", tc.script})
			require.NoError(t, err)
			assert.Equal(t, "/bin/sh", p.Path())
			assert.Positive(t, p.Pid())
			waitDone(t, p)
			assert.True(t, p.Exited())
			if tc.wantErr != "" {
				assert.ErrorContains(t, p.Err(), tc.wantErr)
			} else {
				assert.NoError(t, p.Err())
			}
			err = p.Stop(syscall.SIGTERM, time.Second)
			assert.ErrorIs(t, err, ErrExited)
			assert.ErrorContains(t, err, "had already exited")
			assert.Equal(t, "", p.LogTail(100), "output is discarded by default")
		})
	}
}

func TestStartOutputEnvDir(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "server.log")
	script := `echo "out $FOO $(pwd)"; echo err >&2`
	want := "out bar " + dir + "\nerr\n"
	for _, tc := range []struct {
		name     string
		previous string // log file content before Start
		opts     []Option
		wantTail string
		wantFile string
	}{
		{"tail", "", []Option{WithTail(1 << 10)}, want, ""},
		{"short tail", "", []Option{WithTail(4)}, "err\n", ""},
		{"log file truncated", "old run\n", []Option{WithLogFile(logPath)}, want, want},
		{"log file appended", "old run\n", []Option{WithLogFileAppend(logPath)}, want, "old run\n" + want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(logPath, []byte(tc.previous), 0o644))
			opts := append([]Option{WithEnv([]string{"FOO=bar"}), WithDir(dir)}, tc.opts...)
			p, err := Start("/bin/sh", []string{"-c", script}, opts...)
			require.NoError(t, err)
			waitDone(t, p)
			require.NoError(t, p.Err())
			assert.Equal(t, tc.wantTail, p.LogTail(1<<10), "this run's output only")
			assert.Equal(t, tc.wantTail[max(0, len(tc.wantTail)-3):], p.LogTail(3))
			if tc.wantFile != "" {
				b, err := os.ReadFile(logPath)
				require.NoError(t, err)
				assert.Equal(t, tc.wantFile, string(b))
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		path    string
		opts    []Option
		wantErr string
	}{
		{"missing binary", filepath.Join(dir, "missing"), nil, "start " + filepath.Join(dir, "missing")},
		{"not on PATH", "no-such-program-aware", nil, "no-such-program-aware"},
		{"empty path", "", nil, "empty program path"},
		{"log dir missing", "/bin/true", []Option{WithLogFile(filepath.Join(dir, "none", "log"))}, "log file"},
		{"bad tail", "/bin/true", []Option{WithTail(0)}, "WithTail: max must be positive, got 0"},
		{"tail and log", "/bin/true", []Option{WithTail(10), WithLogFile(filepath.Join(dir, "log"))}, "exclusive"},
		{"bad death signal", "/bin/true", []Option{WithDeathSignal(0)}, "WithDeathSignal: 0 is not a signal"},
		{"missing dir", "/bin/true", []Option{WithDir(filepath.Join(dir, "none"))}, "start /bin/true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(tc.path, nil, tc.opts...)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Nil(t, p)
		})
	}
}

func TestProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []Option
		ownGroup bool
	}{
		{"parent's group", nil, false},
		{"own group", []Option{WithProcessGroup()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("/bin/sleep", []string{"30"}, tc.opts...)
			require.NoError(t, err)
			stopAtEnd(t, p)
			pgid, err := syscall.Getpgid(p.Pid())
			require.NoError(t, err)
			if tc.ownGroup {
				assert.Equal(t, p.Pid(), pgid)
			} else {
				assert.Equal(t, syscall.Getpgrp(), pgid)
			}
			assert.False(t, p.Exited())
			assert.NoError(t, p.Err(), "no error while running")
		})
	}
}

func TestCredential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: switching users needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("skipping: no user nobody: %v", err)
	}
	uid, err := strconv.ParseUint(nobody.Uid, 10, 32)
	require.NoError(t, err)
	gid, err := strconv.ParseUint(nobody.Gid, 10, 32)
	require.NoError(t, err)
	p, err := Start("/bin/sh", []string{"-c", "echo $(id -u) $(id -g)"},
		WithCredential(&syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}), WithTail(100))
	require.NoError(t, err)
	waitDone(t, p)
	require.NoError(t, p.Err())
	assert.Equal(t, nobody.Uid+" "+nobody.Gid+"\n", p.LogTail(100))
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     string
		grace      time.Duration
		wantErr    []string
		wantIs     error
		wantExitEr string
	}{
		{name: "exits on SIGTERM", script: "exec sleep 30", grace: 10 * time.Second, wantExitEr: "signal: terminated"},
		{name: "exits with a status on SIGTERM", script: "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done",
			grace: 10 * time.Second, wantExitEr: "exit status 7"},
		{name: "ignores SIGTERM", script: "trap '' TERM; echo ready; while :; do sleep 0.05; done",
			grace: 200 * time.Millisecond, wantErr: []string{"/bin/sh did not exit within 200ms of terminated", "killed"},
			wantIs: ErrKilled, wantExitEr: "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("/bin/sh", []string{"-c", tc.script}, WithTail(100))
			require.NoError(t, err)
			stopAtEnd(t, p)
			if tc.script != "exec sleep 30" { // let the shell install its trap
				require.Eventually(t, func() bool { return p.LogTail(100) == "ready\n" }, 10*time.Second, 10*time.Millisecond)
			}
			err = p.Stop(syscall.SIGTERM, tc.grace)
			if tc.wantIs == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantIs)
			}
			for _, w := range tc.wantErr {
				assert.ErrorContains(t, err, w)
			}
			assert.True(t, p.Exited())
			assert.EqualError(t, p.Err(), tc.wantExitEr)
		})
	}
}

// Environment of the test binary re-run as an orphaning parent (see
// TestMain): the death signal to use and the file its child writes the
// signal it trapped to.
const (
	envOrphanSig    = "LOCALPROC_TEST_ORPHAN_SIGNAL"
	envOrphanMarker = "LOCALPROC_TEST_ORPHAN_MARKER"
)

func TestMain(m *testing.M) {
	if sig := os.Getenv(envOrphanSig); sig != "" {
		os.Exit(runOrphaningParent(sig, os.Getenv(envOrphanMarker)))
	}
	os.Exit(m.Run())
}

// orphanScript traps TERM and QUIT, writing the signal's name to the
// marker file $M before exiting, and says "ready" once the traps are set.
const orphanScript = `trap 'echo TERM > "$M"; exit 0' TERM
trap 'echo QUIT > "$M"; exit 0' QUIT
echo ready
while :; do sleep 0.05; done`

// runOrphaningParent starts orphanScript with death signal sig, prints its
// pid once it is ready and exits without stopping it.
func runOrphaningParent(sig, marker string) int {
	n, err := strconv.Atoi(sig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := Start("/bin/sh", []string{"-c", orphanScript},
		WithEnv([]string{"M=" + marker, "PATH=" + os.Getenv("PATH")}), WithTail(100), WithDeathSignal(syscall.Signal(n)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for deadline := time.Now().Add(10 * time.Second); p.LogTail(100) != "ready\n"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || p.Exited() {
			fmt.Fprintf(os.Stderr, "child not ready: %v %q\n", p.Err(), p.LogTail(100))
			return 2
		}
	}
	fmt.Println(p.Pid())
	return 0
}

// gone reports whether process pid has ended (it may linger as a zombie
// until its new parent reaps it).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestDeathSignal(t *testing.T) {
	for _, tc := range []struct {
		sig        syscall.Signal
		wantMarker string // what the child trapped; "" for SIGKILL
	}{
		{syscall.SIGTERM, "TERM\n"},
		{syscall.SIGQUIT, "QUIT\n"},
		{syscall.SIGKILL, ""},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "marker")
			parent := exec.Command(os.Args[0], "-test.run=^$")
			parent.Env = append(os.Environ(), envOrphanSig+"="+strconv.Itoa(int(tc.sig)), envOrphanMarker+"="+marker)
			out, err := parent.Output()
			require.NoError(t, err, "orphaning parent: %s", out)
			pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			require.Eventually(t, func() bool { return gone(pid) }, 10*time.Second, 10*time.Millisecond,
				"the child must not outlive its parent")
			b, err := os.ReadFile(marker)
			if tc.wantMarker == "" {
				assert.ErrorIs(t, err, os.ErrNotExist, "SIGKILL cannot be trapped")
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.wantMarker, string(b))
			}
		})
	}
}
