package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// Components are the names Pause, Resume and Restart take, in start order.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

func (c *Cluster) proc(name string) (int, error) {
	for i, p := range c.st.Procs {
		if p.Name == name {
			if !running(p) {
				return i, fmt.Errorf("cluster: %s (pid %d) is not running", name, p.Pid)
			}
			return i, nil
		}
	}
	return -1, fmt.Errorf("cluster: no component %q (have %s)", name, strings.Join(Components, ", "))
}

// Pause freezes a component (SIGSTOP to its process group) until Resume,
// as a stalled disk or a hung process would: etcd paused, the API server
// holds its requests until its timeouts.
// It returns once every thread of the component's process has stopped:
// kill(2) only queues the signal, and on a loaded machine a thread can
// still serve a request after it returns.
func (c *Cluster) Pause(name string) error {
	if err := c.signal(name, syscall.SIGSTOP); err != nil {
		return err
	}
	i, _ := c.proc(name)
	if err := waitStopped(c.st.Procs[i].Pid, 10*time.Second); err != nil {
		// Not left half paused: a caller that fails here never resumes.
		return errors.Join(err, c.signal(name, syscall.SIGCONT))
	}
	return nil
}

// waitStopped polls /proc until every thread of pid is in the stopped
// state ("T"), or fails after timeout naming the threads that still run.
// It polls every millisecond at first, backing off to every 20 ms: on a
// loaded machine its reads take CPU from the threads that must stop.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		running, err := runningThreads(pid)
		if err != nil {
			return fmt.Errorf("cluster: waiting for pid %d to stop: %w", pid, err)
		}
		if len(running) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: pid %d was sent SIGSTOP but threads %s still run after %s", pid, strings.Join(running, ", "), timeout)
		}
		time.Sleep(wait)
	}
}

// runningThreads lists the threads of pid whose state is neither stopped
// ("T", "t") nor dead ("Z", "X": a zombie serves nothing).
func runningThreads(pid int) ([]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread exited (between the listing and the read: ESRCH)
		}
		if err != nil {
			return nil, err
		}
		// The state follows the command name, which is in parentheses and
		// may itself hold spaces or parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) == 0 || !strings.Contains("TtZX", f[0]) {
			out = append(out, t.Name())
		}
	}
	return out, nil
}

// Resume continues a paused component (SIGCONT).
func (c *Cluster) Resume(name string) error { return c.signal(name, syscall.SIGCONT) }

func (c *Cluster) signal(name string, sig syscall.Signal) error {
	i, err := c.proc(name)
	if err != nil {
		return err
	}
	pid := c.st.Procs[i].Pid
	// Components lead their own process group; signal the group.
	if err := syscall.Kill(-pid, sig); err != nil {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("cluster: %s %s (pid %d): %w", sig, name, pid, err)
		}
	}
	return nil
}

// Restart stops a component (SIGTERM, then SIGKILL after 15 s) and starts
// it again with the arguments it had, appending to its log; for etcd and
// the API server it waits until they answer (up to a minute). Then it
// heals the rest (kube-controller-manager exits when the API server goes
// away).
func (c *Cluster) Restart(ctx context.Context, name string) error {
	i, err := c.proc(name)
	if err != nil {
		return err
	}
	p := c.st.Procs[i]
	_ = syscall.Kill(-p.Pid, syscall.SIGCONT) // a paused process cannot stop
	if err := stopPid(ctx, p, 15*time.Second); err != nil {
		return err
	}
	if err := c.startAgain(ctx, i); err != nil {
		return err
	}
	return c.Heal(ctx)
}

// Heal starts again every component that exited, as the kubelet restarts
// a control plane's static pods, and returns what it restarted.
func (c *Cluster) Heal(ctx context.Context) error {
	for i, p := range c.st.Procs {
		if running(p) {
			continue
		}
		if err := c.startAgain(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// startAgain starts component i with its recorded arguments and waits for
// etcd and the API server to answer.
func (c *Cluster) startAgain(ctx context.Context, i int) error {
	p := c.st.Procs[i]
	if len(p.Args) == 0 {
		return fmt.Errorf("cluster: %s was started by an older version without its arguments recorded; restart the control plane", p.Name)
	}
	opts := []localproc.Option{localproc.WithLogFileAppend(filepath.Join(c.dir, "logs", p.Name+".log")), localproc.WithProcessGroup()}
	if p.Detach {
		opts = append(opts, localproc.WithoutDeathSignal())
	}
	pr, err := localproc.Start(p.Path, p.Args, opts...)
	if err != nil {
		return fmt.Errorf("cluster: restarting %s: %w", p.Name, err)
	}
	c.st.Procs[i].Pid = pr.Pid()
	if err := writeState(c.dir, c.st); err != nil {
		return err
	}
	var probe localproc.Probe
	switch p.Name {
	case "etcd":
		for _, a := range p.Args {
			if u, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
				probe = localproc.HTTPProbe(http.DefaultClient, u+"/health", http.StatusOK)
			}
		}
	case "kube-apiserver":
		hc, err := c.adminClient()
		if err != nil {
			return err
		}
		probe = localproc.HTTPProbe(hc, c.Server+"/readyz", http.StatusOK)
	}
	if probe == nil {
		return nil
	}
	if err := pr.WaitReady(ctx, time.Minute, 100*time.Millisecond, probe); err != nil {
		return errors.Join(fmt.Errorf("cluster: %s is not ready after a restart", p.Name), err)
	}
	return nil
}
