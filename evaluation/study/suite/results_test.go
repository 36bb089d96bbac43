package suite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/mirror"
	"github.com/aware-autoscaler/aware/workloads/objstore"
)

// TestResultsShardsMergeFromStore runs the fake study's two shards with
// their results kept in a store, merges them from the store's URL alone,
// and resumes a shard on a machine that lost its folder: on the fake and
// on a real S3-compatible store (versitygw).
func TestResultsShardsMergeFromStore(t *testing.T) {
	ctx := context.Background()
	mem := mirror.NewMemStore()
	// Each store is made by its subtest, whose t a missing binary skips.
	stores := map[string]func(t *testing.T) Connect{
		"fake": func(*testing.T) Connect {
			return func(context.Context, string) (mirror.Store, error) { return mem, nil }
		},
		"versitygw": func(t *testing.T) Connect {
			cfg := realStore(t).Config()
			return func(ctx context.Context, bucket string) (mirror.Store, error) {
				c := cfg
				c.Bucket = bucket
				return objstore.Connect(ctx, c)
			}
		},
	}
	whole, err := Run(ctx, []string{"fake"}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Workers: 1, Log: &bytes.Buffer{}})
	require.NoError(t, err)
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			connect := store(t)
			url := "s3://aware/studies/" + name
			var log bytes.Buffer
			shard := func(i int, out string) error {
				_, err := Run(ctx, []string{"fake"}, Options{Out: out, Mode: Quick, Lab: smallLab(), Workers: 1,
					Shard: study.ShardSpec{Index: i, Of: 2}, Log: &log, Results: Results{URL: url, Connect: connect}})
				return err
			}
			require.NoError(t, shard(1, t.TempDir()))
			_, err := Merge(ctx, "fake", []string{url}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Results: Results{Connect: connect}})
			assert.ErrorContains(t, err, "1 of 2 shards missing (shard-2-of-2)")
			require.NoError(t, shard(2, t.TempDir()))
			assert.Contains(t, log.String(), "results: pushed to "+url+"/shard-2-of-2")

			// A shard retried on another machine finds its cells there.
			before := fakeCells.Load()
			again := t.TempDir()
			require.NoError(t, shard(2, again))
			assert.Equal(t, before, fakeCells.Load(), "no cell computed twice")
			assert.FileExists(t, filepath.Join(again, "fake", "config.json"))

			out := t.TempDir()
			rep, err := Merge(ctx, "fake", []string{url}, Options{Out: out, Mode: Quick, Lab: smallLab(), Results: Results{Connect: connect}})
			require.NoError(t, err)
			assert.Equal(t, whole[0].Report, rep, "the shards from the store make the unsharded report")
			cells, _ := filepath.Glob(filepath.Join(out, "fake", "cells", "*.json"))
			assert.Len(t, cells, 2)
		})
	}

	refused := errors.New("credentials rejected")
	_, err = Run(ctx, []string{"fake"}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Log: &bytes.Buffer{},
		Results: Results{URL: "s3://aware/x", Connect: func(context.Context, string) (mirror.Store, error) { return nil, refused }}})
	assert.ErrorIs(t, err, refused)
	assert.ErrorContains(t, err, "results s3://aware/x")
	_, err = Run(ctx, []string{"fake"}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Log: &bytes.Buffer{}, Results: Results{URL: "s3://aware/../x"}})
	assert.ErrorContains(t, err, `results: "s3://aware/../x": prefix`)
	failing := mirror.NewMemStore()
	failing.FailPut = func(string) error { return refused }
	_, err = Run(ctx, []string{"fake"}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Log: &bytes.Buffer{},
		Results: Results{URL: "s3://aware/y", Connect: func(context.Context, string) (mirror.Store, error) { return failing, nil }}})
	assert.ErrorIs(t, err, refused, "a run whose results could not be pushed fails")
}

var shared struct {
	local *objstore.Local
	err   error
}

// realStore is one versitygw gateway for the package's tests, skipping
// when the binary is missing (failing instead when CI=true).
func realStore(t *testing.T) *objstore.Local {
	t.Helper()
	if shared.local == nil && shared.err == nil {
		dir, err := os.MkdirTemp("", "suite-objstore-")
		if err == nil {
			shared.local, err = objstore.StartLocal(context.Background(), dir)
		}
		shared.err = err
		if err == nil {
			t.Cleanup(func() {
				_ = shared.local.Stop()
				_ = os.RemoveAll(dir)
				shared.local = nil
			})
		}
	}
	if errors.Is(shared.err, objstore.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", shared.err)
	}
	require.NoError(t, shared.err)
	return shared.local
}

// TestResultsOfAnotherConfiguration: a run whose store folder holds
// another configuration's cells is refused, and the error names the store
// folder to clear, not only the local one.
func TestResultsOfAnotherConfiguration(t *testing.T) {
	ctx := context.Background()
	mem := mirror.NewMemStore()
	connect := func(context.Context, string) (mirror.Store, error) { return mem, nil }
	o := Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Workers: 1, Log: &bytes.Buffer{}, Results: Results{URL: "s3://aware/r", Connect: connect}}
	_, err := Run(ctx, []string{"fake"}, o)
	require.NoError(t, err)
	o.Out, o.Mode = t.TempDir(), Full
	_, err = Run(ctx, []string{"fake"}, o)
	require.ErrorIs(t, err, study.ErrOtherConfig)
	assert.ErrorContains(t, err, "the run pulled its folder from s3://aware/r first")
}
