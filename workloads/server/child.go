package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// Child is a workload server running as a child process, such as this
// binary's `aware workload serve` started by a benchmark.
type Child struct {
	proc    *localproc.Process
	url     string
	logPath string
}

// StartChild starts path with args as a workload server that will listen at
// baseURL (e.g. http://127.0.0.1:8080), writing its output to logPath. The
// child gets its own process group, so a terminal's ctrl-C reaches only the
// parent, which stops it in order with Stop; and it receives SIGTERM if the
// parent dies first.
func StartChild(path string, args []string, baseURL, logPath string) (*Child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	proc, err := localproc.Start(cmd, syscall.SIGTERM)
	if err != nil {
		return nil, fmt.Errorf("start workload server %s: %w", path, err)
	}
	return &Child{proc: proc, url: baseURL, logPath: logPath}, nil
}

// URL is the child's base URL.
func (c *Child) URL() string { return c.url }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool { return c.proc.Exited() }

// WaitReady polls /readyz until it answers 200, the child exits, or timeout
// passes; errors include the end of the child's log.
func (c *Child) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("workload server readiness: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.proc.Done():
			return fmt.Errorf("workload server exited before it was ready (%v):\n%s", c.proc.Err(), c.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("workload server not ready at %s: %w\n%s", c.url, ctx.Err(), c.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
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
func (c *Child) LogTail() string { return localproc.FileTail(c.logPath, 4096, 0) }

// FreeLoopbackAddr returns a 127.0.0.1 address whose port was free a moment
// ago.
func FreeLoopbackAddr() (string, error) {
	port, err := localproc.FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
