package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/workloads/app"
)

// childLogTail is how much of the child's log LogTail returns.
const childLogTail = 4096

// Child is a workload server running as a child process, such as this
// binary's `aware workload serve` started by a benchmark.
type Child struct {
	proc *localproc.Process
	url  string
}

// StartChild starts path with args as a workload server that will listen at
// baseURL (e.g. http://127.0.0.1:8080), writing its output to logPath. The
// child gets its own process group, so a terminal's ctrl-C reaches only the
// parent, which stops it in order with Stop; and it receives SIGTERM if the
// parent dies first.
func StartChild(path string, args []string, baseURL, logPath string, opts ...localproc.Option) (*Child, error) {
	opts = append([]localproc.Option{localproc.WithLogFile(logPath),
		localproc.WithProcessGroup(), localproc.WithDeathSignal(syscall.SIGTERM)}, opts...)
	proc, err := localproc.Start(path, args, opts...)
	if err != nil {
		return nil, fmt.Errorf("start workload server %s (server log %s): %w", path, logPath, err)
	}
	return &Child{proc: proc, url: baseURL}, nil
}

// StartApp writes spec to dir/app.yaml and starts exe's `workload serve`
// for it on a free loopback port, with scratch files in dir/scratch and its
// output in logPath (dir/server.log when empty). extra flags are appended
// to the command line (such as --gomaxprocs). It does not wait for
// readiness; see WaitReady.
func StartApp(exe string, spec app.Spec, dir, logPath string, extra []string, opts ...localproc.Option) (*Child, error) {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode app spec: %w", err)
	}
	specPath := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		return nil, err
	}
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	if logPath == "" {
		logPath = filepath.Join(dir, "server.log")
	}
	args := append([]string{"workload", "serve", "--app", specPath, "--addr", addr,
		"--dir", filepath.Join(dir, "scratch"), "--shutdown-timeout", "10s"}, extra...)
	return StartChild(exe, args, "http://"+addr, logPath, opts...)
}

// Pid is the child's process ID.
func (c *Child) Pid() int { return c.proc.Pid() }

// URL is the child's base URL.
func (c *Child) URL() string { return c.url }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool { return c.proc.Exited() }

// WaitReady polls /readyz until it answers 200, the child exits, or timeout
// passes; errors include the end of the child's log.
func (c *Child) WaitReady(ctx context.Context, timeout time.Duration) error {
	probe := localproc.HTTPProbe(nil, c.url+"/readyz", http.StatusOK)
	err := c.proc.WaitReady(ctx, timeout, 50*time.Millisecond, probe)
	switch {
	case errors.Is(err, localproc.ErrExited):
		return fmt.Errorf("workload server exited before it was ready: %w", err)
	case err != nil:
		return fmt.Errorf("workload server not ready at %s: %w", c.url, err)
	}
	return nil
}

// Stop asks the child to shut down gracefully (SIGTERM) and kills it if it
// has not exited within grace. It returns an error if the child had to be
// killed or exited with an error.
func (c *Child) Stop(grace time.Duration) error {
	if !c.proc.Exited() {
		if err := c.proc.Stop(syscall.SIGTERM, grace); err != nil {
			return fmt.Errorf("workload server: %w\n%s", err, c.LogTail())
		}
	}
	if err := c.proc.Err(); err != nil {
		return fmt.Errorf("workload server: %w\n%s", err, c.LogTail())
	}
	return nil
}

// LogTail returns the last 4 kB of the child's log.
func (c *Child) LogTail() string { return c.proc.LogTail(childLogTail) }

// FreeLoopbackAddr returns a 127.0.0.1 address whose port was free a moment
// ago (see localproc.FreeLoopbackAddr).
func FreeLoopbackAddr() (string, error) { return localproc.FreeLoopbackAddr() }
