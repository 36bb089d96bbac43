// Package clustertest provides what tests on real parts need to find them:
// the cached local control plane's binaries and the servers installed from
// Debian (prometheus, influxd, postgres). A missing part skips the test,
// except under CI=true, where ci/setup.sh must have installed it and its
// absence fails the test.
package clustertest

import (
	"errors"
	"os"
	"os/exec"
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
