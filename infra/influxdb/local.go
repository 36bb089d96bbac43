package influxdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// ErrNoBinary is returned by Start when influxd cannot be found; tests skip
// on it (unless CI=true).
var ErrNoBinary = errors.New("influxd (InfluxDB 1.x server) not found")

// ErrRunning is returned by Restart when the server is still running.
var ErrRunning = errors.New("influxd is running")

// EnvBinary names the influxd binary to run, overriding the search of PATH
// and /usr/bin.
const EnvBinary = "AWARE_INFLUXD"

// ConfigFile, LogFile and the directories below are the names Start uses
// inside its directory.
const (
	ConfigFile = "influxd.conf"
	LogFile    = "influxd.log"
	MetaDir    = "meta"
	DataDir    = "data"
	WALDir     = "wal"
)

// defaultStartTimeout bounds a start when ctx has no earlier deadline.
const defaultStartTimeout = time.Minute

// stopGrace is how long Stop waits after SIGTERM before killing influxd.
const stopGrace = 30 * time.Second

// logQuote is how much of influxd.log errors quote.
const logQuote = 4096

// Option configures Start.
type Option func(*settings)

type settings struct {
	port         int
	binary       string
	startTimeout time.Duration
}

// WithPort makes the HTTP API listen on 127.0.0.1:port instead of a free
// port chosen by Start. A fixed port is not retried elsewhere if taken.
func WithPort(port int) Option { return func(s *settings) { s.port = port } }

// WithBinary runs the influxd at path instead of searching $AWARE_INFLUXD,
// PATH and /usr/bin.
func WithBinary(path string) Option { return func(s *settings) { s.binary = path } }

// WithStartTimeout bounds how long Start and Restart wait for /ping (default
// one minute; ctx may end the wait earlier).
func WithStartTimeout(d time.Duration) Option { return func(s *settings) { s.startTimeout = d } }

// Local is an influxd started by Start. Its methods are safe for concurrent
// use.
type Local struct {
	dir     string
	bin     string
	timeout time.Duration

	mu      sync.Mutex
	port    int
	rpcPort int
	proc    *localproc.Process // nil when stopped
	stopErr error
}

// Start runs influxd with its configuration, databases and log in dir
// (created if missing; a directory that already holds data is reused) and
// waits until its HTTP API answers GET /ping with 204. ctx bounds the start
// only; the server runs until Stop or until this process dies. If influxd
// is missing the error matches ErrNoBinary.
func Start(ctx context.Context, dir string, opts ...Option) (*Local, error) {
	s := settings{startTimeout: defaultStartTimeout}
	for _, o := range opts {
		o(&s)
	}
	if s.port < 0 || s.port > 65535 {
		return nil, fmt.Errorf("local InfluxDB: WithPort(%d): not a TCP port", s.port)
	}
	if s.startTimeout <= 0 {
		return nil, fmt.Errorf("local InfluxDB: WithStartTimeout(%s): must be positive", s.startTimeout)
	}
	bin, err := findBinary(s.binary)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("local InfluxDB: %w", err)
	}
	for _, d := range []string{MetaDir, DataDir, WALDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("local InfluxDB: %w", err)
		}
	}
	l := &Local{dir: dir, bin: bin, timeout: s.startTimeout, port: s.port}
	fixed := s.port != 0
	// A port found free may be taken before influxd binds it: retry with
	// other ports unless the caller fixed the HTTP port.
	for attempt := 1; ; attempt++ {
		if !fixed {
			if l.port, err = localproc.FreePort(); err != nil {
				return nil, fmt.Errorf("local InfluxDB: %w", err)
			}
		}
		err = l.start(ctx)
		if err == nil {
			return l, nil
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
}

var errPortTaken = errors.New("port taken")

// findBinary returns the influxd to run.
func findBinary(explicit string) (string, error) {
	check := func(p, origin string) (string, error) {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w: %w", origin, ErrNoBinary, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s: %w: %s is not an executable file", origin, ErrNoBinary, p)
		}
		return p, nil
	}
	if explicit != "" {
		return check(explicit, "WithBinary")
	}
	if p := os.Getenv(EnvBinary); p != "" {
		return check(p, EnvBinary+"="+p)
	}
	if p, err := exec.LookPath("influxd"); err == nil {
		return p, nil
	}
	return check("/usr/bin/influxd", "PATH and /usr/bin")
}

// start writes the configuration and runs influxd on l.port; l.mu must be
// held or l not yet shared.
func (l *Local) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	rpc, err := localproc.FreePort()
	if err != nil {
		return fmt.Errorf("local InfluxDB: %w", err)
	}
	l.rpcPort = rpc
	// The readiness probe cannot tell influxd from another server on the
	// same port, so make sure the port is free first.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.port)))
	if err != nil {
		return fmt.Errorf("local InfluxDB: HTTP port 127.0.0.1:%d: %w: %w", l.port, errPortTaken, err)
	}
	ln.Close()
	conf := filepath.Join(l.dir, ConfigFile)
	if err := os.WriteFile(conf, []byte(l.config()), 0o600); err != nil {
		return fmt.Errorf("local InfluxDB: write configuration: %w", err)
	}
	logPath := filepath.Join(l.dir, LogFile)
	proc, err := localproc.Start(l.bin, []string{"run", "-config", conf},
		localproc.WithEnv(serverEnv()), localproc.WithDir(l.dir),
		localproc.WithLogFileAppend(logPath), localproc.WithDeathSignal(syscall.SIGKILL))
	if err != nil {
		return fmt.Errorf("local InfluxDB: %w", err)
	}
	probe := localproc.HTTPProbe(&http.Client{Timeout: time.Second}, l.url()+"/ping", http.StatusNoContent)
	if err := proc.WaitReady(ctx, 0, 50*time.Millisecond, probe); err != nil {
		if !proc.Exited() {
			_ = proc.Stop(syscall.SIGKILL, 10*time.Second)
		}
		out := proc.LogTail(logQuote)
		if strings.Contains(out, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("local InfluxDB (%s run -config %s, HTTP 127.0.0.1:%d): %w", l.bin, conf, l.port, err)
	}
	l.proc, l.stopErr = proc, nil
	return nil
}

// serverEnv is this process's environment without INFLUXDB_* variables,
// which would override the configuration file.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INFLUXDB_") {
			env = append(env, kv)
		}
	}
	return env
}

// config renders the influxd configuration. Both spellings of the usage
// reporting switch are written: upstream reads reporting-disabled, Debian's
// build reads reporting-enabled, and each ignores the other's key.
func (l *Local) config() string {
	q := strconv.Quote
	return `# Written by AWARE-Go infra/influxdb; rewritten at every start.
reporting-disabled = true
reporting-enabled = false
bind-address = ` + q("127.0.0.1:"+strconv.Itoa(l.rpcPort)) + `

[meta]
  dir = ` + q(filepath.Join(l.dir, MetaDir)) + `
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = ` + q(filepath.Join(l.dir, DataDir)) + `
  wal-dir = ` + q(filepath.Join(l.dir, WALDir)) + `
  index-version = "inmem"
  query-log-enabled = false
  trace-logging-enabled = false

[coordinator]
  log-queries-after = "0s"

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  enabled = true
  log-enabled = false

[http]
  enabled = true
  bind-address = ` + q("127.0.0.1:"+strconv.Itoa(l.port)) + `
  auth-enabled = false
  log-enabled = false
  write-tracing = false
  pprof-enabled = false
  unix-socket-enabled = false

[logging]
  level = "warn"
  suppress-logo = true
`
}

func (l *Local) url() string { return "http://127.0.0.1:" + strconv.Itoa(l.port) }

// URL returns the base URL of the HTTP API, http://127.0.0.1:<port>.
func (l *Local) URL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.url()
}

// Port returns the HTTP port; it stays the same across Restart.
func (l *Local) Port() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.port
}

// Dir returns the directory holding the configuration, data and log.
func (l *Local) Dir() string { return l.dir }

// LogPath returns the path of influxd's log.
func (l *Local) LogPath() string { return filepath.Join(l.dir, LogFile) }

// Running reports whether influxd is running (started and neither stopped
// nor exited).
func (l *Local) Running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.proc != nil && !l.proc.Exited()
}

// Stop shuts influxd down with SIGTERM (it closes its shards and WAL),
// killing it if it outlives 30 s. It is safe to call more than once; calls
// after the first return the first call's result until Restart.
func (l *Local) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return l.stopErr
	}
	proc := l.proc
	l.proc = nil
	if err := proc.Stop(syscall.SIGTERM, stopGrace); err != nil {
		l.stopErr = fmt.Errorf("stop local InfluxDB on port %d: %w; log %s:\n%s", l.port, err,
			l.LogPath(), strings.TrimSpace(localproc.FileTail(l.LogPath(), logQuote, 0)))
	}
	return l.stopErr
}

// Restart starts influxd again after Stop (or after it exited), on the same
// directory and HTTP port, so its databases and clients' URLs survive. It
// returns an error matching ErrRunning if the server is running.
func (l *Local) Restart(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc != nil {
		if !l.proc.Exited() {
			return fmt.Errorf("local InfluxDB on port %d: %w", l.port, ErrRunning)
		}
		l.proc = nil
	}
	return l.start(ctx)
}
