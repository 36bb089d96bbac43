package calibration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

func TestMeterFromEnv(t *testing.T) {
	t.Setenv(EnvServicePIDs, "")
	m, err := MeterFromEnv(nil)
	require.NoError(t, err)
	assert.Nil(t, m, "no IDs, no meter")

	self := strconv.Itoa(os.Getpid())
	t.Setenv(EnvServicePIDs, self)
	m, err = MeterFromEnv(nil)
	require.NoError(t, err)
	require.NotNil(t, m, "this process's environment names a process")
	_, err = m()
	require.NoError(t, err)

	m, err = MeterFromEnv([]string{"AWARE_S3_ENDPOINT=x"})
	require.NoError(t, err)
	assert.Nil(t, m, "a child environment without IDs ignores this process's")
	m, err = MeterFromEnv([]string{EnvServicePIDs + "=" + self})
	require.NoError(t, err)
	assert.NotNil(t, m)
	_, err = MeterFromEnv([]string{EnvServicePIDs + "=1,x"})
	assert.ErrorContains(t, err, EnvServicePIDs+`: process ID "x"`)
}

// fakeServices is a Services without an object store or database.
func fakeServices(t *testing.T, cleaned *bool) Services {
	return func(_ context.Context, seed int64) (segments.Env, []string, func(), error) {
		return segments.Env{Dir: t.TempDir(), Seed: seed}, nil, func() { *cleaned = true }, nil
	}
}

func TestCalibrateInProcess(t *testing.T) {
	var cleaned bool
	path := filepath.Join(t.TempDir(), "profile.json")
	cfg := Config{Options: quickOptions(), Segments: []string{"json2yaml"}, Seed: 3, Services: fakeServices(t, &cleaned),
		Out: path, Command: "aware workload calibrate --segments json2yaml"}
	var out, progress bytes.Buffer
	require.NoError(t, Calibrate(context.Background(), cfg, &out, &progress))
	assert.True(t, cleaned, "services cleaned up")
	assert.Contains(t, progress.String(), "calibrating [ 12/ 12] json2yaml")
	assert.Contains(t, out.String(), "wrote "+path+" (6 entries)")
	p, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, cfg.Command, p.Command)
	require.Len(t, p.Entries, 6)
	for _, e := range p.Entries {
		assert.Equal(t, "json2yaml", e.Segment)
		assert.Len(t, e.CPUSecondsRepeats, 2)
	}

	cleaned = false
	cfg.Segments, cfg.Out = []string{"nope"}, ""
	assert.ErrorContains(t, Calibrate(context.Background(), cfg, &out, &progress), `segment "nope": unknown`)
	assert.True(t, cleaned, "services cleaned up after an error")
	cfg.Services = nil
	assert.ErrorContains(t, Calibrate(context.Background(), cfg, &out, &progress), "no services")
	cfg.Services = func(context.Context, int64) (segments.Env, []string, func(), error) {
		return segments.Env{}, nil, nil, errors.New("no database")
	}
	assert.ErrorContains(t, Calibrate(context.Background(), cfg, &out, &progress), "no database")
}

func TestMeasureChild(t *testing.T) {
	var cleaned bool
	opts, err := json.Marshal(quickOptions())
	require.NoError(t, err)
	cfg := ChildConfig{Target: Target{Segment: "json2yaml", Size: 250}, First: true, Seed: 1, Opts: string(opts), Services: fakeServices(t, &cleaned)}
	var out bytes.Buffer
	require.NoError(t, MeasureChild(context.Background(), cfg, &out))
	assert.True(t, cleaned)
	var e Entry
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e))
	assert.Equal(t, "json2yaml", e.Segment)
	assert.Equal(t, 250, e.Size)
	assert.Len(t, e.CPUSecondsRepeats, 1)

	cfg.Opts = "{bad"
	assert.ErrorContains(t, MeasureChild(context.Background(), cfg, &out), "--options: invalid character")
	cfg.Opts = `{"repeats": 1, "colour": "red"}`
	assert.ErrorContains(t, MeasureChild(context.Background(), cfg, &out), `--options: json: unknown field "colour"`)
}
