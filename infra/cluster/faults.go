package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
func (c *Cluster) Pause(name string) error { return c.signal(name, syscall.SIGSTOP) }

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
