package generator

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// FirstApps generates the first n applications of the pool of seed, with
// the default options otherwise.
func FirstApps(prof *calibration.Profile, seed int64, n int) ([]App, error) {
	opts := DefaultOptions()
	opts.Apps, opts.Seed = n, seed
	return Generate(opts, prof)
}

// Simulated returns apps in their simulator form, with load shapes from
// the traces in dir at step (LoadShapes: the shipped or fitted shapes where
// a file is absent), and the shapes.
func Simulated(apps []App, dir string, step time.Duration, seed uint64) ([]sim.App, Shapes, error) {
	shapes, err := LoadShapes(dir, step, seed)
	if err != nil {
		return nil, Shapes{}, err
	}
	simApps, err := SimApps(apps, shapes)
	return simApps, shapes, err
}

// AppIndex is the index (1-based) of the application of the default pool
// called name, the inverse of AppName: app-0001 to app-1000 name the
// 1000-app pool (DefaultOptions().Apps).
func AppIndex(name string) (int, error) {
	idx, err := strconv.Atoi(strings.TrimPrefix(name, "app-"))
	if err != nil || idx < 1 || !strings.HasPrefix(name, "app-") {
		return 0, fmt.Errorf("%q: want a pool name like app-0001", name)
	}
	if n := DefaultOptions().Apps; idx > n {
		return 0, fmt.Errorf("%q: not in the pool, which holds app-0001 to app-%04d", name, n)
	}
	return idx, nil
}

// WritePool writes the pool's apps (WriteDir) and its summary
// (summary.md) to dir.
func WritePool(dir string, apps []App, prof *calibration.Profile) error {
	if err := WriteDir(dir, apps); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "summary.md"))
	if err != nil {
		return err
	}
	if err := Summarize(apps, prof).WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
