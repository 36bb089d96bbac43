package generator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// PoolVersion is the version of the pool.json format.
const PoolVersion = 1

// Pool is the index of a pool directory (pool.json).
type Pool struct {
	Version int         `json:"version"`
	Train   int         `json:"train"`
	Test    int         `json:"test"`
	Apps    []PoolEntry `json:"apps"`
}

// PoolEntry locates one app of a pool.
type PoolEntry struct {
	Name  string `json:"name"`
	Split string `json:"split"`
	// File is the app's YAML, relative to the pool directory.
	File string `json:"file"`
}

// Directory layout of a pool.
const (
	PoolFile     = "pool.json"
	AppsDir      = "apps"
	ManifestsDir = "manifests"
)

// WriteDir writes each app as dir/apps/<name>.yaml and the index
// dir/pool.json, creating dir. Files of other apps already there are left
// alone; ReadDir reads only the apps the index lists.
func WriteDir(dir string, apps []App) error {
	if err := os.MkdirAll(filepath.Join(dir, AppsDir), 0o755); err != nil {
		return fmt.Errorf("write pool: %w", err)
	}
	pool := Pool{Version: PoolVersion, Apps: make([]PoolEntry, 0, len(apps))}
	names := make(map[string]bool, len(apps))
	for i, a := range apps {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("write pool: apps[%d]: %w", i, err)
		}
		if names[a.Name()] {
			return fmt.Errorf("write pool: apps[%d]: duplicate name %q", i, a.Name())
		}
		names[a.Name()] = true
		data, err := yaml.Marshal(a)
		if err != nil {
			return fmt.Errorf("write pool: %s: %w", a.Name(), err)
		}
		file := filepath.ToSlash(filepath.Join(AppsDir, a.Name()+".yaml"))
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			return fmt.Errorf("write pool: %w", err)
		}
		pool.Apps = append(pool.Apps, PoolEntry{Name: a.Name(), Split: a.Split, File: file})
		if a.Split == SplitTrain {
			pool.Train++
		} else {
			pool.Test++
		}
	}
	data, err := json.MarshalIndent(pool, "", "  ")
	if err != nil {
		return fmt.Errorf("write pool: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PoolFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write pool: %w", err)
	}
	return nil
}

// ReadDir reads the apps listed in dir/pool.json, in its order, and
// validates each against its index entry.
func ReadDir(dir string) ([]App, error) {
	index := filepath.Join(dir, PoolFile)
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("read pool %s: %w", dir, err)
	}
	var pool Pool
	if err := json.Unmarshal(data, &pool); err != nil {
		return nil, fmt.Errorf("read pool: %s: %w", index, err)
	}
	if pool.Version != PoolVersion {
		return nil, fmt.Errorf("read pool: %s: version %d, this build reads %d", index, pool.Version, PoolVersion)
	}
	apps := make([]App, 0, len(pool.Apps))
	var errs []error
	for i, e := range pool.Apps {
		path := filepath.Join(dir, filepath.FromSlash(e.File))
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("apps[%d]: %w", i, err))
			continue
		}
		var a App
		if err := yaml.UnmarshalStrict(data, &a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		if a.Name() != e.Name || a.Split != e.Split {
			errs = append(errs, fmt.Errorf("%s: app %q split %q, but %s lists apps[%d] as %q split %q", path, a.Name(), a.Split, PoolFile, i, e.Name, e.Split))
			continue
		}
		apps = append(apps, a)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read pool %s: %w", dir, err)
	}
	return apps, nil
}
