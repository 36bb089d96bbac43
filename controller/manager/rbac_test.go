package manager_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
)

// TestGeneratedRolesCurrent reruns controller-gen over the kubebuilder:rbac
// markers and compares with the committed ClusterRoles (as `make generate`
// writes them).
func TestGeneratedRolesCurrent(t *testing.T) {
	gen, err := filepath.Abs("../../.bin/controller-gen")
	require.NoError(t, err)
	if _, err := os.Stat(gen); err != nil {
		clustertest.Missing(t, "controller-gen not installed (run `make setup`): %v", err)
	}
	for _, tc := range []struct{ role, paths, committed string }{
		{"aware-controller", "{./autoscaler/...,./manager/...,./admission/...}", "../deploy/rbac/role.yaml"},
		{"aware-env", "./mpaenv/...", "../deploy/env-rbac/role.yaml"},
		{"aware-agents", "./agents/...", "../deploy/agents-rbac/role.yaml"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(gen, "rbac:roleName="+tc.role, "paths="+tc.paths, "output:rbac:dir="+dir)
			cmd.Dir = ".."
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			got, err := os.ReadFile(filepath.Join(dir, "role.yaml"))
			require.NoError(t, err)
			want, err := os.ReadFile(tc.committed)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "controller/deploy/%s is stale: run `make generate`", tc.committed[len("../deploy/"):])
		})
	}
}
