package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Child is a workload server running as a child process, such as this
// binary's `aware workload serve` started by a benchmark.
type Child struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	done    chan struct{}
	err     error // set before done is closed
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start workload server %s: %w", path, err)
	}
	c := &Child{cmd: cmd, url: baseURL, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// URL is the child's base URL.
func (c *Child) URL() string { return c.url }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

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
		case <-c.done:
			return fmt.Errorf("workload server exited before it was ready (%v):\n%s", c.err, c.LogTail())
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
	if !c.Exited() {
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signal workload server: %w", err)
		}
	}
	select {
	case <-c.done:
		if c.err != nil {
			return fmt.Errorf("workload server: %w\n%s", c.err, c.LogTail())
		}
		return nil
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("workload server did not stop within %s; killed\n%s", grace, c.LogTail())
	}
}

// LogTail returns the last 4 kB of the child's log.
func (c *Child) LogTail() string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	const max = 4096
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}

// FreeLoopbackAddr returns a 127.0.0.1 address whose port was free a moment
// ago.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
