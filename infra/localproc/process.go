package localproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// fileQuote is how much of a log file error messages quote.
const fileQuote = 4096

var (
	// ErrExited marks errors about a process that exited when it should
	// still have been running (during start, or before Stop).
	ErrExited = errors.New("exited")
	// ErrKilled marks a Stop that had to kill the process after its grace
	// period.
	ErrKilled = errors.New("killed")
)

// Process is a started child process whose exit is observed by a goroutine.
type Process struct {
	cmd      *exec.Cmd
	done     chan struct{}
	err      error // set before done is closed
	logPath  string
	logStart int64
	tail     *Tail
}

// Start starts the program at path (or found on PATH, like exec.Command)
// with args, configured by opts. It returns once the process runs; the
// process lives until it exits, Stop, or the death of this process (see
// WithDeathSignal).
func Start(path string, args []string, opts ...Option) (*Process, error) {
	s := defaults()
	for _, o := range opts {
		o(&s)
	}
	if path == "" {
		return nil, errors.New("start: empty program path")
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = s.env, s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: s.deathSig, Setpgid: s.ownGroup, Credential: s.cred}
	if s.detached {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), logPath: s.logPath}
	switch {
	case s.logPath != "":
		f, start, err := openLog(s.logPath, s.logAppend)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child holds its own descriptor
		cmd.Stdout, cmd.Stderr, p.logStart = f, f, start
	case s.tailWanted:
		p.tail = &Tail{Max: s.tailMax}
		cmd.Stdout, cmd.Stderr = p.tail, p.tail
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// openLog opens the log file and returns the offset this run's output
// starts at.
func openLog(path string, appendLog bool) (*os.File, int64, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("log file: %w", err)
	}
	start, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("log file: %w", err)
	}
	return f, start, nil
}

// Path is the program the process runs.
func (p *Process) Path() string { return p.cmd.Path }

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error (nil for a clean exit, and while it runs).
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// exitStatus describes how the exited process ended.
func (p *Process) exitStatus() string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// Stop sends sig, waits up to grace, then kills the process. It returns nil
// when the process exited after sig, whatever its status (see Err); an
// error matching ErrKilled if it had to be killed, and one matching
// ErrExited if it had exited before Stop.
func (p *Process) Stop(sig os.Signal, grace time.Duration) error {
	if p.Exited() {
		return fmt.Errorf("%s had already %w (%s)", p.cmd.Path, ErrExited, p.exitStatus())
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
		return fmt.Errorf("%s did not exit within %s of %v: %w", p.cmd.Path, grace, sig, ErrKilled)
	}
}

// LogTail returns at most the last max bytes of what this process wrote to
// its log file or Tail ("" if its output is discarded).
func (p *Process) LogTail(max int) string {
	switch {
	case p.logPath != "":
		return FileTail(p.logPath, int64(max), p.logStart)
	case p.tail != nil:
		s := p.tail.String()
		if len(s) > max {
			s = s[len(s)-max:]
		}
		return s
	default:
		return ""
	}
}

// quoteOutput is the end of the process's output for an error message:
// the last 4 KiB of a log file, or the whole Tail.
func (p *Process) quoteOutput() string {
	switch {
	case p.logPath != "":
		return fmt.Sprintf("; log %s:\n%s", p.logPath, strings.TrimSpace(p.LogTail(fileQuote)))
	case p.tail != nil:
		return "; output:\n" + strings.TrimSpace(p.tail.String())
	default:
		return ""
	}
}
