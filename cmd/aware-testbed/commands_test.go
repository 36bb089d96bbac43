package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// The figures README quotes ("Run the testbed on kind / on a cloud").
func TestCostPrintsREADMEFigures(t *testing.T) {
	out, err := run(t, "cost", "--apps", "20")
	require.NoError(t, err)
	assert.Contains(t, out, "pods at start    59 (requests 33.1 CPU, 14.4 GiB)")
	assert.Contains(t, out, "nodes            9 × e2-standard-8 in us-central1-a")
	assert.Contains(t, out, "total $/h        2.64 (63 per day)")

	out, err = run(t, "cost")
	require.NoError(t, err)
	assert.Contains(t, out, "pods at start    2498 (requests 1350.9 CPU, 380.1 GiB)")
	assert.Contains(t, out, "nodes            342 × e2-standard-8")
	assert.Contains(t, out, "total $/h        96.44 (2315 per day)")

	out, err = run(t, "cost", "--apps", "20", "--gke-machine-type", "e2-standard-16")
	require.NoError(t, err)
	assert.Contains(t, out, "× e2-standard-16")

	_, err = run(t, "cost", "--gke-machine-type", "m1-huge")
	assert.ErrorContains(t, err, `gke.machineType "m1-huge"`)
}

func TestRenderWritesObjects(t *testing.T) {
	out, err := run(t, "render", "--target", "kubeconfig", "--apps", "2")
	require.NoError(t, err)
	assert.Contains(t, out, "kind: MultidimPodAutoscaler")
	assert.Contains(t, out, "name: app-0002")
}

func TestRenderStudyJob(t *testing.T) {
	out, err := run(t, "render", "--target", "kubeconfig", "--study-job", "bootstrapping,serving", "--study-size", "full", "--study-shards", "4")
	require.NoError(t, err)
	assert.Contains(t, out, "kind: Job")
	assert.Contains(t, out, "completionMode: Indexed")
	assert.Contains(t, out, "--shard-index-env=JOB_COMPLETION_INDEX")
	assert.NotContains(t, out, "kind: MultidimPodAutoscaler", "only the Job's objects")
	assert.Contains(t, out, "--results=s3://aware/studies/aware-study")
	out, err = run(t, "render", "--target", "kubeconfig", "--study-job", "serving", "--study-results", "s3://runs/nightly/42")
	require.NoError(t, err)
	assert.Contains(t, out, "--results=s3://runs/nightly/42")

	_, err = run(t, "render", "--target", "local", "--study-job", "serving")
	assert.ErrorContains(t, err, "its nodes are kwok's and run no containers, so the Job's pods would never run; shard as processes instead: aware study NAMES --quick|--full --shard I/N")
	_, err = run(t, "render", "--target", "kubeconfig", "--study-job", "serving", "--study-results", "/tmp/x")
	assert.ErrorContains(t, err, `results "/tmp/x": want s3://BUCKET/PREFIX`)
	_, err = run(t, "render", "--target", "kubeconfig", "--study-results", "s3://aware/x")
	assert.ErrorContains(t, err, "--study-results: only with --study-job")

	_, err = run(t, "render", "--target", "kubeconfig", "--study-job", "Bad_Name")
	assert.ErrorContains(t, err, `studies[0] "Bad_Name"`)
	_, err = run(t, "render", "--target", "kubeconfig", "--study-shards", "4")
	assert.ErrorContains(t, err, "--study-shards: only with --study-job")
}
