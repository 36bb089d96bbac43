package mirror_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study/mirror"
)

func readerOf(s string) io.Reader { return strings.NewReader(s) }

// storeWith holds one object per key, its content the key.
func storeWith(t *testing.T, keys ...string) *mirror.MemStore {
	t.Helper()
	s := mirror.NewMemStore()
	for _, k := range keys {
		require.NoError(t, s.Put(context.Background(), k, readerOf(k), int64(len(k))))
	}
	return s
}

func TestFetch(t *testing.T) {
	ctx := context.Background()
	u := mirror.URL{Bucket: "aware", Prefix: "run"}
	complete := []string{
		"run/shard-1-of-2/serving/config.json", "run/shard-1-of-2/serving/cells/a.json", "run/shard-1-of-2/policies/p.ckpt",
		"run/shard-2-of-2/serving/config.json", "run/shard-2-of-2/serving/cells/b.json",
		"run/notes.txt",
	}
	dir := t.TempDir()
	dirs, err := mirror.Fetch(ctx, storeWith(t, complete...), u, "serving", dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "shard-1-of-2", "serving"), filepath.Join(dir, "shard-2-of-2", "serving")}, dirs)
	assert.Equal(t, "run/shard-2-of-2/serving/cells/b.json", read(t, dirs[1], "cells/b.json"))
	assert.NoFileExists(t, filepath.Join(dir, "shard-1-of-2", "policies", "p.ckpt"), "only the study's folder")

	for _, tc := range []struct {
		name string
		keys []string
		sub  string
		want string
	}{
		{"no shards", []string{"run/notes.txt"}, "serving", "no shard folders (shard-I-of-N/) there"},
		{"a shard missing", []string{"run/shard-1-of-3/serving/c", "run/shard-3-of-3/serving/c"}, "serving", "1 of 3 shards missing (shard-2-of-3)"},
		{"two runs", []string{"run/shard-1-of-1/serving/c", "run/shard-1-of-2/serving/c", "run/shard-2-of-2/serving/c"}, "serving", "shards of runs split 1, 2 ways meet there"},
		{"another study", []string{"run/shard-1-of-1/adaptation/c"}, "serving", "shard-1-of-1 holds no serving/ folder"},
		{"a bad key", []string{"run/shard-1-of-1/serving/../../x"}, "serving", `segment ".."`},
		{"a bad folder", []string{"run/shard-1-of-1/serving/c"}, "../serving", `segment ".."`},
		{"not a shard's name", []string{"run/shard-01-of-2/serving/c", "run/shard-3-of-2/serving/c"}, "serving", "no shard folders"},
	} {
		_, err := mirror.Fetch(ctx, storeWith(t, tc.keys...), u, tc.sub, t.TempDir())
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.ErrorContains(t, err, "s3://aware/run", tc.name)
	}
}
