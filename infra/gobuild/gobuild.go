package gobuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Step is one cached build: Dir is its final directory in the cache (one
// per program and version), Build fills a temporary directory's bin/
// subdirectory, which becomes Dir.
type Step struct {
	Dir   string
	Build func(ctx context.Context, tmp string) error
}

// Install runs the steps whose Dir does not exist yet, in order. Progress
// goes to log (nil discards it).
func Install(ctx context.Context, steps []Step, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	for _, s := range steps {
		if _, err := os.Stat(s.Dir); err == nil {
			continue
		}
		cache := filepath.Dir(s.Dir)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return fmt.Errorf("cache directory: %w", err)
		}
		name := filepath.Base(s.Dir)
		tmp, err := os.MkdirTemp(cache, ".build-"+name+"-")
		if err != nil {
			return err
		}
		start := time.Now()
		fmt.Fprintf(log, "building %s into %s…\n", name, cache)
		if err := s.Build(ctx, tmp); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("building %s: %w", name, err)
		}
		if err := os.Rename(filepath.Join(tmp, "bin"), s.Dir); err != nil {
			os.RemoveAll(tmp)
			if _, serr := os.Stat(s.Dir); serr == nil {
				continue // a concurrent Install finished the same build first
			}
			return err
		}
		os.RemoveAll(tmp)
		fmt.Fprintf(log, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	}
	return nil
}

// ModInfo is the part of `go mod download -json` used here.
type ModInfo struct {
	Dir, GoMod, Error string
}

// ModDownload downloads mod (module@version) into the module cache, run in
// the wrapper module dir.
func ModDownload(ctx context.Context, dir, mod string, log io.Writer) (ModInfo, error) {
	cmd := Command(ctx, dir, "mod", "download", "-json", mod)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, log
	err := cmd.Run()
	var info ModInfo
	if jerr := json.Unmarshal(out.Bytes(), &info); jerr == nil && info.Error != "" {
		return info, fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	if err != nil {
		return info, fmt.Errorf("go mod download %s: %w", mod, err)
	}
	return info, nil
}

// Build resolves the wrapper module's dependencies with `go get pins...`
// (module@version each: a bare `go get` of its packages would move them to
// their latest releases) and builds pkgs into dir/bin, statically and
// without file paths.
func Build(ctx context.Context, dir, ldflags string, pins, pkgs []string, log io.Writer) error {
	if len(pins) > 0 {
		if err := Run(ctx, dir, log, append([]string{"get"}, pins...)...); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", filepath.Join(dir, "bin") + "/"}, pkgs...)
	return Run(ctx, dir, log, args...)
}

// Run runs the go command with args in dir, its output to log.
func Run(ctx context.Context, dir string, log io.Writer, args ...string) error {
	cmd := Command(ctx, dir, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", args[0], err)
	}
	return nil
}

// Command is the go command in dir for a wrapper module: static builds,
// no workspace, the local toolchain, interrupted (not killed) on ctx's end.
func Command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
