package localproc

import (
	"fmt"
	"syscall"
)

// Option configures Start.
type Option func(*settings)

type settings struct {
	env        []string
	dir        string
	cred       *syscall.Credential
	deathSig   syscall.Signal
	detached   bool
	ownGroup   bool
	logPath    string
	logAppend  bool
	tailMax    int
	tailWanted bool
}

func defaults() settings { return settings{deathSig: syscall.SIGKILL} }

func (s *settings) validate() error {
	if s.tailWanted && s.tailMax <= 0 {
		return fmt.Errorf("WithTail: max must be positive, got %d", s.tailMax)
	}
	if s.tailWanted && s.logPath != "" {
		return fmt.Errorf("WithTail and WithLogFile(%s) are exclusive", s.logPath)
	}
	if s.deathSig <= 0 && !s.detached {
		return fmt.Errorf("WithDeathSignal: %d is not a signal", s.deathSig)
	}
	return nil
}

// WithEnv sets the process's complete environment (default: this
// process's). A nil env also means this process's.
func WithEnv(env []string) Option { return func(s *settings) { s.env = env } }

// WithDir sets the working directory (default: this process's).
func WithDir(dir string) Option { return func(s *settings) { s.dir = dir } }

// WithCredential runs the process as another user and group, which needs
// the privileges to switch (default: this process's user).
func WithCredential(cred *syscall.Credential) Option {
	return func(s *settings) { s.cred = cred }
}

// WithDeathSignal sets the signal the process receives if its parent dies
// first (Linux's parent-death signal; default SIGKILL). Servers with a
// cleaner emergency stop use that, e.g. SIGQUIT for PostgreSQL. Linux
// sends it when the thread that started the process ends, so do not call
// Start from a goroutine that locked its OS thread and returns without
// unlocking it.
func WithDeathSignal(sig syscall.Signal) Option { return func(s *settings) { s.deathSig = sig } }

// WithoutDeathSignal lets the process outlive its parent (a server started by
// a command that exits, such as `aware cluster up`); stopping it is then the
// caller's job, by pid.
func WithoutDeathSignal() Option { return func(s *settings) { s.detached = true } }

// WithProcessGroup starts the process in a process group of its own, so
// that a terminal's ctrl-C reaches only the parent, which can then stop it
// in order. Stop still signals the process only, not its group.
func WithProcessGroup() Option { return func(s *settings) { s.ownGroup = true } }

// WithLogFile sends the process's stdout and stderr to the file at path,
// created or truncated (mode 0644).
func WithLogFile(path string) Option {
	return func(s *settings) { s.logPath, s.logAppend = path, false }
}

// WithLogFileAppend is WithLogFile that appends to an existing file; LogTail
// and error messages quote only what this process wrote.
func WithLogFileAppend(path string) Option {
	return func(s *settings) { s.logPath, s.logAppend = path, true }
}

// WithTail keeps the last max bytes of the process's stdout and stderr in
// memory; it excludes WithLogFile. Without either, output is discarded.
func WithTail(max int) Option {
	return func(s *settings) { s.tailMax, s.tailWanted = max, true }
}
