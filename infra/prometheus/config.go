package prometheus

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// DefaultScrapeInterval is the global scrape and evaluation interval unless
// WithScrapeInterval says otherwise: short, so that tests see data quickly.
const DefaultScrapeInterval = time.Second

// maxScrapeTimeout is Prometheus' own default scrape timeout; the timeout
// written is the smaller of it and the scrape interval (Prometheus refuses
// a timeout longer than the interval).
const maxScrapeTimeout = 10 * time.Second

// Option configures Start.
type Option func(*settings)

// target is one static scrape job.
type target struct {
	job   string
	path  string
	addrs []string
}

type settings struct {
	binary   string
	interval time.Duration
	targets  []target
	rawYAML  []string
	args     []string
	logger   *slog.Logger
	errs     []error
}

func defaults() settings {
	return settings{interval: DefaultScrapeInterval, logger: slog.New(slog.DiscardHandler)}
}

// WithBinary runs the Prometheus binary at path instead of looking for
// "prometheus" on PATH and then at /usr/bin/prometheus.
func WithBinary(path string) Option { return func(s *settings) { s.binary = path } }

// WithScrapeInterval sets the global scrape_interval and evaluation_interval
// (default DefaultScrapeInterval, 1s). The global scrape_timeout is the
// smaller of the interval and 10s.
func WithScrapeInterval(d time.Duration) Option { return func(s *settings) { s.interval = d } }

// WithStaticTarget adds addr ("127.0.0.1:port") to the static scrape job
// job, scraped at path (empty: /metrics). Several calls with the same job
// add targets to it; they must agree on the path.
func WithStaticTarget(job, addr, path string) Option {
	return func(s *settings) {
		if err := addTarget(&s.targets, job, addr, path, false); err != nil {
			s.errs = append(s.errs, err)
		}
	}
}

// WithScrapeConfigYAML adds raw scrape configs: a YAML sequence of
// Prometheus scrape_config entries, each with a job_name, e.g.
//
//   - job_name: twin
//     honor_labels: true
//     static_configs: [{targets: ["127.0.0.1:9000"]}]
//
// It is the escape hatch for anything WithStaticTarget cannot say
// (relabelling, honor_labels, service discovery files, ...). Start checks
// that it parses and that every job name is unique; Prometheus checks the
// rest when it loads the configuration.
func WithScrapeConfigYAML(raw string) Option {
	return func(s *settings) { s.rawYAML = append(s.rawYAML, raw) }
}

// WithArgs appends command-line flags (e.g. "--query.lookback-delta=1m") to
// those Start passes.
func WithArgs(args ...string) Option {
	return func(s *settings) { s.args = append(s.args, args...) }
}

// WithLogger logs the server's lifecycle (start, reload, stop) to l.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

func (s *settings) validate() error {
	errs := append([]error(nil), s.errs...)
	if s.interval <= 0 || s.interval%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("WithScrapeInterval: %s must be a positive whole number of milliseconds", s.interval))
	}
	if s.logger == nil {
		errs = append(errs, errors.New("WithLogger: nil logger"))
	}
	return errors.Join(errs...)
}

// addTarget adds or (replace) sets the static job's targets.
func addTarget(ts *[]target, job, addr, path string, replace bool) error {
	if !model.LabelValue(job).IsValid() || job == "" {
		return fmt.Errorf("static target: job name %q must be a non-empty UTF-8 string", job)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("static target of job %q: address %q is not host:port", job, addr)
	}
	if path == "" {
		path = "/metrics"
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("static target of job %q: metrics path %q must start with /", job, path)
	}
	for i := range *ts {
		t := &(*ts)[i]
		if t.job != job {
			continue
		}
		if replace {
			t.path, t.addrs = path, []string{addr}
			return nil
		}
		if t.path != path {
			return fmt.Errorf("static target of job %q: path %q differs from the job's %q", job, path, t.path)
		}
		for _, a := range t.addrs {
			if a == addr {
				return nil
			}
		}
		t.addrs = append(t.addrs, addr)
		return nil
	}
	*ts = append(*ts, target{job: job, path: path, addrs: []string{addr}})
	return nil
}

// parseRaw parses the raw scrape configs and returns them with their job
// names.
func parseRaw(raws []string) ([]map[string]any, []string, error) {
	var out []map[string]any
	var jobs []string
	for i, raw := range raws {
		var entries []map[string]any
		if err := yaml.Unmarshal([]byte(raw), &entries); err != nil {
			return nil, nil, fmt.Errorf("WithScrapeConfigYAML #%d: not a YAML sequence of scrape configs: %w", i+1, err)
		}
		for j, e := range entries {
			name, ok := e["job_name"].(string)
			if !ok || name == "" {
				return nil, nil, fmt.Errorf("WithScrapeConfigYAML #%d: entry %d has no job_name", i+1, j+1)
			}
			jobs = append(jobs, name)
			out = append(out, e)
		}
	}
	return out, jobs, nil
}

// render returns the prometheus.yml for the settings' interval, targets and
// raw scrape configs.
func render(interval time.Duration, targets []target, raws []string) ([]byte, error) {
	extra, rawJobs, err := parseRaw(raws)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var scrapes []any
	for _, t := range targets {
		seen[t.job] = true
		scrapes = append(scrapes, map[string]any{
			"job_name":       t.job,
			"metrics_path":   t.path,
			"static_configs": []any{map[string]any{"targets": t.addrs}},
		})
	}
	for i, e := range extra {
		if seen[rawJobs[i]] {
			return nil, fmt.Errorf("prometheus config: job_name %q is used twice", rawJobs[i])
		}
		seen[rawJobs[i]] = true
		scrapes = append(scrapes, e)
	}
	if scrapes == nil {
		scrapes = []any{}
	}
	cfg := map[string]any{
		"global": map[string]any{
			"scrape_interval":     model.Duration(interval).String(),
			"scrape_timeout":      model.Duration(min(interval, maxScrapeTimeout)).String(),
			"evaluation_interval": model.Duration(interval).String(),
		},
		"scrape_configs": scrapes,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}
	return b, nil
}
