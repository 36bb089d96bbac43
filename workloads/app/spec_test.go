package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

const validSpec = `apiVersion: aware.dev/v1alpha1
kind: App
name: sleepy
seed: 7
segments:
  - name: sleep
    size: 2
  - name: sleep
    size: 1
`

func TestParseValid(t *testing.T) {
	s, err := Parse("app.yaml", []byte(validSpec))
	require.NoError(t, err)
	assert.Equal(t, "sleepy", s.Name)
	assert.Equal(t, int64(7), s.Seed)
	assert.Equal(t, []segments.Spec{{Name: "sleep", Size: 2}, {Name: "sleep", Size: 1}}, s.Segments)
	objects, db := s.Needs()
	assert.False(t, objects)
	assert.False(t, db)
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ spec, want string }{
		"apiVersion": {`{"apiVersion":"v1","kind":"App","name":"a","segments":[{"name":"sleep","size":1}]}`, `apiVersion: got "v1"`},
		"kind":       {`{"apiVersion":"aware.dev/v1alpha1","kind":"Pod","name":"a","segments":[{"name":"sleep","size":1}]}`, `kind: got "Pod"`},
		"name":       {`{"apiVersion":"aware.dev/v1alpha1","kind":"App","name":"A_b","segments":[{"name":"sleep","size":1}]}`, `name: "A_b" is not a DNS-1123 label`},
		"empty":      {`{"apiVersion":"aware.dev/v1alpha1","kind":"App","name":"a"}`, "segments: at least one segment is required"},
		"segment":    {`{"apiVersion":"aware.dev/v1alpha1","kind":"App","name":"a","segments":[{"name":"sleep","size":1},{"name":"bogus","size":1}]}`, `segments[1].name: unknown segment "bogus"`},
		"size":       {`{"apiVersion":"aware.dev/v1alpha1","kind":"App","name":"a","segments":[{"name":"sleep","size":0}]}`, "segments[0].size: 0 must be positive"},
		"field":      {`{"apiVersion":"aware.dev/v1alpha1","kind":"App","name":"a","extra":1,"segments":[{"name":"sleep","size":1}]}`, `unknown field "extra"`},
		"yaml":       {"name: [", "app.yaml: error converting YAML to JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("app.yaml", []byte(tc.spec))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "app.yaml")
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(path, []byte(validSpec), 0o644))
	s, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, "sleepy", s.Name)
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorContains(t, err, "missing.yaml")
}

func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := Load(f)
		assert.NoError(t, err, f)
	}
}

func TestChainRunsInOrderAndCloses(t *testing.T) {
	s, err := Parse("app.yaml", []byte(validSpec))
	require.NoError(t, err)
	ctx := context.Background()
	c, err := Prepare(ctx, s, segments.Env{Dir: t.TempDir()})
	require.NoError(t, err)
	r, err := c.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Items, "both segments ran")
	assert.Equal(t, int64(3), r.Ops, "sleep reports its milliseconds")
	require.NoError(t, c.Close(ctx))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	c, err = Prepare(ctx, s, segments.Env{Dir: t.TempDir()})
	require.NoError(t, err)
	_, err = c.Run(cancelled)
	assert.ErrorContains(t, err, "segments[0] sleep")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPrepareFailsWithoutServices(t *testing.T) {
	for _, name := range segments.Names() {
		info, _ := segments.Lookup(name)
		if len(info.Needs) == 0 || info.Needs[0] == "dir" {
			continue
		}
		s := Spec{APIVersion: SpecVersion, Kind: "App", Name: "a", Segments: []segments.Spec{{Name: "sleep", Size: 1}, {Name: name, Size: info.Sizes[0]}}}
		_, err := Prepare(context.Background(), s, segments.Env{Dir: t.TempDir()})
		assert.ErrorContains(t, err, "segments[1]", name)
	}
}

func TestExample(t *testing.T) {
	s, err := Example("mixed")
	require.NoError(t, err)
	assert.Equal(t, "mixed", s.Name)
	_, db := s.Needs()
	assert.True(t, db)
	_, err = Example("nope")
	assert.ErrorContains(t, err, `example app "nope"`)
}
