package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// Files of a supervisor in its directory.
const (
	pidFile = "supervisor.pid"
	logFile = "supervisor.log"
)

// Start runs the supervisor, `aware <args...>` (args selecting the command
// that calls Run with dir), detached from the caller: in its own process
// group, surviving the caller's exit, logging to dir/supervisor.log. It
// returns once the supervisor has written its endpoints, or with the end
// of its log if it exits first or timeout passes.
func Start(ctx context.Context, aware string, args []string, dir string, timeout time.Duration) (Endpoints, error) {
	if ep, err := ReadEndpoints(dir); err == nil && alive(ep.Pid) {
		return ep, nil // already running
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Endpoints{}, fmt.Errorf("local: %w", err)
	}
	_ = os.Remove(filepath.Join(dir, EndpointsFile))
	log := filepath.Join(dir, logFile)
	p, err := localproc.Start(aware, args, localproc.WithoutDeathSignal(), localproc.WithProcessGroup(), localproc.WithLogFile(log))
	if err != nil {
		return Endpoints{}, fmt.Errorf("local: starting the supervisor: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(p.Pid())+"\n"), 0o644); err != nil {
		return Endpoints{}, fmt.Errorf("local: %w", err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if ep, err := ReadEndpoints(dir); err == nil && ep.Pid == p.Pid() {
			return ep, nil
		}
		select {
		case <-p.Done():
			return Endpoints{}, fmt.Errorf("local: the supervisor exited (%v) before it was up; end of %s:\n%s", p.Err(), log, localproc.FileTail(log, 4096, 0))
		case <-deadline.C:
			_ = Stop(context.WithoutCancel(ctx), dir)
			return Endpoints{}, fmt.Errorf("local: the supervisor was not up after %s; end of %s:\n%s", timeout, log, localproc.FileTail(log, 4096, 0))
		case <-ctx.Done():
			_ = Stop(context.WithoutCancel(ctx), dir)
			return Endpoints{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// Running reports the endpoints of dir's supervisor if it is running.
func Running(dir string) (Endpoints, bool) {
	ep, err := ReadEndpoints(dir)
	return ep, err == nil && alive(ep.Pid)
}

// Stop ends dir's supervisor (SIGTERM, then SIGKILL to its process group
// after a minute) and waits until it is gone; nothing running is not an
// error.
func Stop(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("local: %s: bad pid %q", filepath.Join(dir, pidFile), strings.TrimSpace(string(b)))
	}
	if alive(pid) {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("local: stopping the supervisor (pid %d): %w", pid, err)
		}
		deadline := time.Now().Add(time.Minute)
		for alive(pid) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for i := 0; alive(pid) && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			return fmt.Errorf("local: the supervisor (pid %d) survived SIGKILL", pid)
		}
	}
	return os.Remove(filepath.Join(dir, pidFile))
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
