package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// FileTarget is one target group of Prometheus's file-based service
// discovery: addresses ("127.0.0.1:9100") and the labels of their series
// (__metrics_path__ sets the path scraped, "/metrics" when absent).
type FileTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// targetName is what a target file may be called: it becomes
// <name>.json in the targets directory.
var targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// RegisterTarget has the running testbed's Prometheus scrape targets (job
// "study"): it writes them, atomically, to dir/<name>.json, where dir is
// the testbed's Endpoints.Targets; Prometheus reads the file within a
// second. unregister removes the file (a file already gone is not an
// error); registering a name again replaces its targets.
func RegisterTarget(dir, name string, targets []FileTarget) (unregister func() error, err error) {
	if !targetName.MatchString(name) {
		return nil, fmt.Errorf("local: scrape target name %q: want letters, digits, '_', '.' or '-', not starting with '.', '_' or '-'", name)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("local: scrape target %s: no target groups", name)
	}
	for i, g := range targets {
		if len(g.Targets) == 0 {
			return nil, fmt.Errorf("local: scrape target %s: group %d has no targets", name, i)
		}
		for _, a := range g.Targets {
			if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
				return nil, fmt.Errorf("local: scrape target %s: group %d: address %q is not host:port", name, i, a)
			}
		}
	}
	b, err := json.Marshal(targets)
	if err != nil {
		return nil, fmt.Errorf("local: scrape target %s: %w", name, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("local: scrape target %s: the targets directory (is the testbed up?): %w", name, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("local: scrape target %s: the targets directory %s is not a directory", name, dir)
	}
	path := filepath.Join(dir, name+".json")
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("local: scrape target %s: %w", name, err)
	}
	return func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("local: unregistering scrape target %s: %w", name, err)
		}
		return nil
	}, nil
}
