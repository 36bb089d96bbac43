// Package clustertest provides what tests on real parts need to find them:
// the cached local control plane's binaries and the servers installed from
// Debian (prometheus, influxd, postgres). A missing part skips the test,
// except under CI=true, where ci/setup.sh must have installed it and its
// absence fails the test.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

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

// RequireNoForbidden fails t if the API server refused any request user
// made at or after since with 403 Forbidden (from the control plane's audit
// log), naming each: a component run with its generated ClusterRole must
// never be refused. It returns the user's requests since then, for a review
// of the role (UnusedGrants). Register it with t.Cleanup before starting
// the component, so that it runs after the component has stopped.
func RequireNoForbidden(t testing.TB, c *cluster.Cluster, user string, since time.Time) []cluster.AuditEvent {
	t.Helper()
	all, err := c.Audit(user)
	if err != nil {
		t.Fatal(err)
	}
	all = slices.DeleteFunc(all, func(e cluster.AuditEvent) bool { return e.At.Before(since) })
	refused := cluster.Refused(all)
	if len(refused) == 0 {
		return all
	}
	// One line per permission lacking: how often, and its first request.
	count := map[cluster.Permission]int{}
	first := map[cluster.Permission]cluster.AuditEvent{}
	for _, e := range refused {
		p := cluster.Permission{Group: e.Group, Resource: e.Resource, Verb: e.Verb}
		if count[p] == 0 {
			first[p] = e
		}
		count[p]++
	}
	var lines []string
	for _, p := range cluster.Used(refused) {
		lines = append(lines, fmt.Sprintf("%d× %s, first: %s", count[p], p.Verb+" "+p.Resource, first[p]))
	}
	if len(lines) == 0 { // non-resource URLs only
		lines = append(lines, "first: "+refused[0].String())
	}
	t.Errorf("the API server refused %d requests of %s (its ClusterRole lacks them):\n%s", len(refused), user, strings.Join(lines, "\n"))
	return all
}

// UnusedGrants returns the grants of role (one "verb group/resource" each,
// resourceNames and non-resource URLs aside) that no request in used
// exercised: what a review of the role against what the code calls looks
// at. A grant may be unused in one test and needed in another (a rarely
// taken path), so tests log these rather than fail on them.
func UnusedGrants(role *rbacv1.ClusterRole, used []cluster.Permission) []string {
	var out []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if !slices.Contains(used, cluster.Permission{Group: g, Resource: res, Verb: v}) {
						grp := g
						if grp == "" {
							grp = "core"
						}
						out = append(out, v+" "+grp+"/"+res)
					}
				}
			}
		}
	}
	return out
}
