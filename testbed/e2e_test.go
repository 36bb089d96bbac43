package testbed_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/testbedtest"
)

// TestLocalTargetEndToEnd stands up the local target for real: the local
// control plane, the Pulumi engine with the source-built CLI and
// Kubernetes provider deploying the CRD, RBAC and 5 apps, and the
// supervisor running the twin, Prometheus, InfluxDB, the controller and the
// agent runner as the testbed's service accounts. The MPAs must reach an
// agent stage, Prometheus must scrape the twin's pods and the controller
// serve its metrics; a second deployment must change nothing, and down
// must leave no process, cluster or stack behind.
func TestLocalTargetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Pulumi, Prometheus, InfluxDB, the controller and the agents")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	d := testbedtest.LocalDriver(ctx, t, tmp)
	cfg := testbed.DefaultConfig()
	cfg.Apps, cfg.Options.Step = 5, 5*time.Second
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = d.Down(context.Background())
		}
	})

	outputs, ep, err := d.Up(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, float64(5), outputs[testbed.OutputApps].Value)
	require.NotNil(t, ep)

	// Every MPA reaches an agent stage.
	var st testbed.Status
	require.Eventually(t, func() bool {
		st, err = d.Status(ctx)
		return err == nil && st.MPAs == 5 && st.Stages[""] == 0
	}, 3*time.Minute, 2*time.Second, "MPAs without a stage: %+v (%v)", st.Stages, err)
	require.NotNil(t, st.Local)

	// Prometheus scrapes the twin's pods; the controller serves its metrics.
	q := ep.Prometheus + "/api/v1/query?query=" + url.QueryEscape(`count(aware_workload_requests_received_total{namespace="aware-apps"})`)
	var res struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.Eventually(t, func() bool {
		return getJSON(ctx, q, &res) == nil && len(res.Data.Result) == 1 && res.Data.Result[0].Value[1] != "0"
	}, time.Minute, time.Second, "no workload series of the apps in Prometheus: %+v", res)
	body, err := testbedtest.Get(ctx, ep.Controller)
	require.NoError(t, err)
	assert.Contains(t, body, "aware_controller_last_round")

	// Deploying again changes nothing (up filled in the local cluster's
	// kubeconfig).
	cfg.Kubeconfig = filepath.Join(d.Dir, "cluster", "kubeconfig")
	prev, err := d.Preview(ctx, cfg)
	require.NoError(t, err)
	for op, n := range prev.ChangeSummary {
		if op != apitype.OpSame {
			t.Errorf("a second deployment would %s %d resources", op, n)
		}
	}

	require.NoError(t, d.Down(ctx))
	downed = true
	_, running := local.Running(filepath.Join(d.Dir, "local"))
	assert.False(t, running, "the supervisor survived down")
	for _, dir := range []string{"cluster", "local"} {
		_, err := os.Stat(filepath.Join(d.Dir, dir))
		assert.True(t, os.IsNotExist(err), "%s left behind", dir)
	}
	assert.NoFileExists(t, filepath.Join(d.Dir, "state", ".pulumi", "stacks", testbed.Project, testbed.DefaultStack+".json"), "the stack was not removed")
}

func getJSON(ctx context.Context, u string, v any) error {
	s, err := testbedtest.Get(ctx, u)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(s), v)
}
