package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// ErrNoBinary is returned by Start when the Prometheus binary cannot be
// found; tests skip on it (unless CI=true).
var ErrNoBinary = errors.New("prometheus binary not found (apt-get install prometheus)")

// DefaultBinary is where Debian's prometheus package installs the server.
const DefaultBinary = "/usr/bin/prometheus"

const (
	// startTimeout bounds Start when ctx has no earlier deadline.
	startTimeout = time.Minute
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 30 * time.Second
	// logTail is how much of the server's log errors quote.
	logTail = 4096
	// pollInterval paces the readiness and target polls.
	pollInterval = 100 * time.Millisecond
	// startAttempts bounds the retries when the free port was taken.
	startAttempts = 3
)

// Local is a Prometheus server started by Start.
type Local struct {
	dir, cfgPath, logPath, bin string
	addr                       string
	proc                       *localproc.Process
	api                        v1.API
	http                       *http.Client
	logger                     *slog.Logger

	mu       sync.Mutex // guards the configuration below and its file
	interval time.Duration
	targets  []target
	raw      []string
	args     []string // extra flags, for Restart

	stopOnce sync.Once
	stopErr  error
}

// Start runs Prometheus with its configuration in dir/prometheus.yml, its
// TSDB in dir/data and its log appended to dir/prometheus.log, listening on
// a free 127.0.0.1 port with --web.enable-lifecycle, and waits until
// /-/ready answers 200. ctx bounds the start only (at most a minute); the
// server runs until Stop or until this process dies. If the binary is
// missing the error matches ErrNoBinary.
func Start(ctx context.Context, dir string, opts ...Option) (*Local, error) {
	s := defaults()
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("local Prometheus: %w", err)
	}
	bin, err := findBinary(s.binary)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("local Prometheus: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("local Prometheus: %w", err)
	}
	l := &Local{
		dir: dir, cfgPath: filepath.Join(dir, "prometheus.yml"), logPath: filepath.Join(dir, "prometheus.log"), bin: bin,
		http: &http.Client{Timeout: 10 * time.Second}, logger: s.logger,
		interval: s.interval, targets: s.targets, raw: s.rawYAML, args: s.args,
	}
	if err := l.writeConfig(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// A port found free may be taken before the server binds it: retry.
	for attempt := 1; ; attempt++ {
		l.addr = ""
		err = l.start(ctx, s.args)
		if err == nil {
			break
		}
		if attempt == startAttempts || !errors.Is(err, errPortTaken) {
			return nil, err
		}
		l.logger.Warn("prometheus port taken, retrying", "addr", l.addr, "attempt", attempt)
	}
	client, err := api.NewClient(api.Config{Address: l.URL(), Client: l.http})
	if err != nil {
		_ = l.Stop()
		return nil, fmt.Errorf("local Prometheus: %w", err)
	}
	l.api = v1.NewAPI(client)
	l.logger.Info("prometheus started", "url", l.URL(), "dir", dir, "pid", l.proc.Pid())
	return l, nil
}

var errPortTaken = errors.New("port taken")

// findBinary returns path if set, else prometheus on PATH, else
// DefaultBinary.
func findBinary(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("local Prometheus: WithBinary(%s): %w: %w", path, ErrNoBinary, err)
		}
		return path, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(DefaultBinary); err != nil {
		return "", fmt.Errorf("local Prometheus: not on PATH nor at %s: %w", DefaultBinary, ErrNoBinary)
	}
	return DefaultBinary, nil
}

// start runs the server on l.addr, or on a free port if l.addr is "".
func (l *Local) start(ctx context.Context, extra []string) error {
	addr := l.addr
	if addr == "" {
		var err error
		if addr, err = localproc.FreeLoopbackAddr(); err != nil {
			return fmt.Errorf("local Prometheus: %w", err)
		}
	}
	args := append([]string{
		"--config.file=" + l.cfgPath,
		"--storage.tsdb.path=" + filepath.Join(l.dir, "data"),
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
		"--log.level=info",
	}, extra...)
	proc, err := localproc.Start(l.bin, args, localproc.WithDir(l.dir), localproc.WithLogFileAppend(l.logPath),
		localproc.WithDeathSignal(syscall.SIGTERM))
	if err != nil {
		return fmt.Errorf("local Prometheus: %w", err)
	}
	l.addr, l.proc = addr, proc
	if err := proc.WaitReady(ctx, 0, pollInterval, localproc.HTTPProbe(nil, l.URL()+"/-/ready", http.StatusOK)); err != nil {
		if !proc.Exited() {
			_ = proc.Stop(syscall.SIGKILL, 10*time.Second)
		}
		if strings.Contains(proc.LogTail(logTail), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("local Prometheus (%s on %s): %w", l.bin, addr, err)
	}
	return nil
}

// URL is the server's base URL, http://127.0.0.1:port.
func (l *Local) URL() string { return "http://" + l.addr }

// Addr is the server's listen address, 127.0.0.1:port.
func (l *Local) Addr() string { return l.addr }

// Dir is the directory holding the configuration, the TSDB and the log.
func (l *Local) Dir() string { return l.dir }

// ConfigPath is the path of the prometheus.yml the server loads.
func (l *Local) ConfigPath() string { return l.cfgPath }

// LogPath is the path of the server's log.
func (l *Local) LogPath() string { return l.logPath }

// API is a client of the server's HTTP API.
func (l *Local) API() v1.API { return l.api }

// Version asks the running server for its version (/api/v1/status/buildinfo).
func (l *Local) Version(ctx context.Context) (string, error) {
	b, err := l.api.Buildinfo(ctx)
	if err != nil {
		return "", fmt.Errorf("prometheus at %s: build info: %w", l.addr, err)
	}
	return b.Version, nil
}

// writeConfig renders the configuration into cfgPath atomically; l.mu must
// be held or l not yet shared.
func (l *Local) writeConfig() error {
	b, err := render(l.interval, l.targets, l.raw)
	if err != nil {
		return fmt.Errorf("local Prometheus: %w", err)
	}
	if err := atomicfile.Write(l.cfgPath, b, 0o644); err != nil {
		return fmt.Errorf("local Prometheus: config: %w", err)
	}
	return nil
}

// SetStaticTarget makes addr the only target of the static job (created if
// new), scraped at path (empty: /metrics). It takes effect at the next
// Reload.
func (l *Local) SetStaticTarget(job, addr, path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return addTarget(&l.targets, job, addr, path, true)
}

// RemoveStaticJob removes a static job set by WithStaticTarget or
// SetStaticTarget and reports whether it existed; it takes effect at the
// next Reload.
func (l *Local) RemoveStaticJob(job string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.targets)
	l.targets = slices.DeleteFunc(l.targets, func(t target) bool { return t.job == job })
	return len(l.targets) != n
}

// Reload rewrites prometheus.yml from the current targets and asks the
// server to load it (POST /-/reload); an invalid configuration is reported
// with Prometheus' own message and leaves the server on the previous one.
// New targets are scraped shortly after: use WaitForTarget.
func (l *Local) Reload(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writeConfig(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL()+"/-/reload", nil)
	if err != nil {
		return fmt.Errorf("reload prometheus: %w", err)
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return fmt.Errorf("reload prometheus at %s: %w", l.addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, logTail))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reload prometheus at %s: status %d: %s", l.addr, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	l.logger.Info("prometheus reloaded", "config", l.cfgPath)
	return nil
}

// WaitForTarget waits until the scrape job has at least one active target
// and every one of them is up (last scrape succeeded), polling
// /api/v1/targets. It returns when ctx ends with the targets' last state.
func (l *Local) WaitForTarget(ctx context.Context, job string) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last := "not polled"
	for {
		desc, ok := l.targetsUp(ctx, job)
		if ok {
			return nil
		}
		if ctx.Err() == nil || last == "not polled" { // keep the state seen before ctx ended
			last = desc
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus at %s: job %q not up: %w (%s)", l.addr, job, ctx.Err(), last)
		case <-l.proc.Done():
			return fmt.Errorf("prometheus at %s: job %q not up: prometheus %w (%v); log %s:\n%s", l.addr, job,
				localproc.ErrExited, l.proc.Err(), l.logPath, strings.TrimSpace(localproc.FileTail(l.logPath, logTail, 0)))
		case <-tick.C:
		}
	}
}

// targetsUp reports whether job's targets are all up, with a description
// of their state.
func (l *Local) targetsUp(ctx context.Context, job string) (string, bool) {
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := l.api.Targets(tctx)
	if err != nil {
		return "targets: " + err.Error(), false
	}
	var states []string
	up := true
	for _, t := range res.Active {
		if t.ScrapePool != job {
			continue
		}
		desc := fmt.Sprintf("%s %s", t.ScrapeURL, t.Health)
		if t.LastError != "" {
			desc += ": " + t.LastError
		}
		states = append(states, desc)
		up = up && t.Health == v1.HealthGood
	}
	if len(states) == 0 {
		return "no active target", false
	}
	return strings.Join(states, "; "), up
}

// Restart starts the server again after Stop, on the same address and
// TSDB, so that clients' URLs and the data before the stop survive (the
// stop leaves a gap in the series).
func (l *Local) Restart(ctx context.Context) error {
	if !l.proc.Exited() {
		return fmt.Errorf("local Prometheus at %s: still running", l.addr)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := l.start(ctx, l.args); err != nil {
		return err
	}
	l.stopOnce, l.stopErr = sync.Once{}, nil
	l.logger.Info("prometheus restarted", "url", l.URL(), "pid", l.proc.Pid())
	return nil
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 30s). It is safe
// to call more than once; later calls return the first result until
// Restart.
func (l *Local) Stop() error {
	l.stopOnce.Do(func() {
		if err := l.proc.Stop(syscall.SIGTERM, stopGrace); err != nil {
			l.stopErr = fmt.Errorf("stop prometheus at %s: %w; log %s:\n%s", l.addr, err, l.logPath,
				strings.TrimSpace(localproc.FileTail(l.logPath, logTail, 0)))
		}
		l.logger.Info("prometheus stopped", "url", l.URL(), "err", l.stopErr)
	})
	return l.stopErr
}
