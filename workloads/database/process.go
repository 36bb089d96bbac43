package database

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a started server whose exit is observed by a goroutine.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// startProcess starts cmd; deathSig is delivered to it if this process dies
// first, so that a crashed test leaves no server behind.
func startProcess(cmd *exec.Cmd, deathSig syscall.Signal) (*process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = deathSig
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig, waits up to grace, then kills. It returns nil when the
// process exited after sig.
func (p *process) stop(sig os.Signal, grace time.Duration) error {
	if p.exited() {
		return fmt.Errorf("%s had already exited: %v", p.cmd.Path, p.err)
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.cmd.Path, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %v; killed", p.cmd.Path, grace, sig)
	}
}

// fileTail returns at most the last max bytes of the file at path that lie
// at or after offset from (for error messages about one start attempt).
func fileTail(path string, max, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	start := from
	if st, err := f.Stat(); err == nil && st.Size()-max > start {
		start = st.Size() - max
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return string(b)
}
