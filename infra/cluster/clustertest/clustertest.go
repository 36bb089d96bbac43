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

// RequireBinary returns the path of the executable name on $PATH.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (CI=true): run ci/setup.sh: %v", name, err)
		}
		t.Skipf("%s not installed; run ci/setup.sh (or apt-get install %s) to run this test", name, name)
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
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: ci/setup.sh builds them)", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}
