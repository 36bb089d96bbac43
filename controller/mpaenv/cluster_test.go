package mpaenv_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/aware-autoscaler/aware/controller/mpaenv"
)

// TestClusterConfigValidate: every bad field is named by its flag, all at
// once, before the cluster is contacted.
func TestClusterConfigValidate(t *testing.T) {
	good := mpaenv.ClusterConfig{Prometheus: "http://127.0.0.1:9", Namespace: "default", Step: 15 * time.Second}
	require.NoError(t, good.Validate())
	for _, tc := range []struct {
		name string
		edit func(*mpaenv.ClusterConfig)
		want []string
	}{
		{"no prometheus", func(c *mpaenv.ClusterConfig) { c.Prometheus = "" }, []string{"--prometheus: a Prometheus URL is required with --cluster"}},
		{"bad step", func(c *mpaenv.ClusterConfig) { c.Step = 0 }, []string{"--step 0s: must be positive"}},
		{"negative timeouts and episode", func(c *mpaenv.ClusterConfig) { c.Episode, c.Actuation, c.Pickup = -1, -time.Second, -time.Second },
			[]string{"--episode -1", "--actuation-timeout -1s", "--pickup-timeout -1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			loaded := false
			_, err := mpaenv.ClusterEnvs(context.Background(), c, func() (*rest.Config, error) { loaded = true; return nil, errors.New("loaded") }, slog.New(slog.DiscardHandler))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.False(t, loaded, "REST config loaded for an invalid configuration")
		})
	}
	_, err := mpaenv.ClusterEnvs(context.Background(), good, func() (*rest.Config, error) { return nil, errors.New("no kubeconfig") }, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "no kubeconfig")
}
