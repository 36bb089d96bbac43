// Package clustertest provides what tests on real parts need to find them:
// the cached local control plane's binaries and the servers installed from
// Debian (prometheus, influxd, postgres). A missing part skips the test,
// except under CI=true, where ci/setup.sh must have installed it and its
// absence fails the test.
package clustertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aware-autoscaler/aware/infra/cluster"
)

// Missing skips the test because a part is not installed, or fails it
// under CI=true; the message says what is missing and how to install it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, and ci/setup.sh should have installed it: "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireBinary returns the path of the executable name on $PATH.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s not installed (run ci/setup.sh, or apt-get install %s): %v", name, name, err)
	}
	return p
}

// Binaries returns the cached control-plane binaries of the default
// versions (`aware cluster install` builds them; a cold build takes about
// ten minutes).
func Binaries(t testing.TB) cluster.Binaries {
	t.Helper()
	b, err := cluster.Cached(t.Context())
	if errors.Is(err, cluster.ErrNotBuilt) {
		Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BuildAware builds this module's aware CLI into dir and returns the
// binary, for tests that run its real processes (controller, agent runner,
// the testbed's supervisor).
func BuildAware(ctx context.Context, t testing.TB, dir string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("BuildAware: not in a module")
	}
	bin := filepath.Join(dir, "aware")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/aware")
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/aware: %v\n%s", err, b)
	}
	return bin
}
