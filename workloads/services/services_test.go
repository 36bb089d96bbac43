package services_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/services"
)

func TestStartRejectsUnknownMode(t *testing.T) {
	_, _, err := services.Start(t.Context(), "cloud", t.TempDir(), nil)
	assert.ErrorContains(t, err, `--services "cloud": want local, env or none`)
}

func TestStartEnvNeedsTheVariables(t *testing.T) {
	t.Setenv("AWARE_S3_ENDPOINT", "")
	t.Setenv("AWARE_DATABASE_URL", "")
	_, _, err := services.Start(t.Context(), services.Env, t.TempDir(), &segments.Env{})
	assert.ErrorContains(t, err, "--services env: set AWARE_S3_ENDPOINT")
}

// TestScratchNone: without services, Scratch gives a scratch folder and
// the seed, no clients and no child environment, and cleanup removes it.
func TestScratchNone(t *testing.T) {
	env, childEnv, cleanup, err := services.Scratch(services.None, "aware-services-test-")(context.Background(), 7)
	require.NoError(t, err)
	assert.Nil(t, childEnv)
	assert.Nil(t, env.Objects)
	assert.Nil(t, env.DB)
	assert.EqualValues(t, 7, env.Seed)
	st, err := os.Stat(env.Dir)
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	cleanup()
	_, err = os.Stat(env.Dir)
	assert.True(t, os.IsNotExist(err), "scratch folder left behind: %v", err)

	_, _, _, err = services.Scratch("cloud", "aware-services-test-")(context.Background(), 1)
	assert.ErrorContains(t, err, `--services "cloud"`)
}
