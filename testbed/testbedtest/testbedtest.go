// Package testbedtest holds what the tests that stand up a testbed share:
// a local testbed's driver (skipping a test whose machine lacks what it
// needs), a writer into the test's log and a plain HTTP GET.
package testbedtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/toolchain"
)

// LocalDriver is the driver of a local testbed in dir/testbed, with aware
// built into dir, no traces (the generator's synthetic load shapes) and its
// output in t's log. It first requires Prometheus, InfluxDB, Go, the control
// plane's binaries and the Pulumi toolchain (clustertest.Missing when one is
// absent).
func LocalDriver(ctx context.Context, t *testing.T, dir string) *testbed.Driver {
	t.Helper()
	for _, b := range []string{"prometheus", "influxd", "go"} {
		clustertest.RequireBinary(t, b)
	}
	clustertest.Binaries(t)
	tools, err := toolchain.Cached(ctx)
	if errors.Is(err, toolchain.ErrNotBuilt) {
		clustertest.Missing(t, "%v", err)
	}
	require.NoError(t, err)
	return &testbed.Driver{Dir: filepath.Join(dir, "testbed"), Tools: tools, Aware: clustertest.BuildAware(ctx, t, dir),
		Traces: filepath.Join(dir, "no-traces"), Out: LogWriter{T: t}}
}

// LogWriter writes into T's log, a line per write.
type LogWriter struct{ T *testing.T }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Get is the body of a GET of u, whatever its status.
func Get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
