// Package testbedtest holds what the tests that stand up a testbed share:
// a local testbed's driver (skipping a test whose machine lacks what it
// needs), a writer into the test's log, a plain HTTP GET, and readers of
// the controller's stage-transition counter and of an MPA's episode
// rewards in the testbed's InfluxDB that use none of the studies' code.
package testbedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
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

var transitionsRE = regexp.MustCompile(`(?m)^aware_controller_stage_transitions_total\{from="([^"]*)",to="([^"]*)"\} (\S+)$`)

// Transitions are the controller's stage changes so far (its
// aware_controller_stage_transitions_total at controller, its metrics
// URL), by "from→to".
func Transitions(ctx context.Context, t *testing.T, controller string) map[string]float64 {
	t.Helper()
	body, err := Get(ctx, controller)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range transitionsRE.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err)
		out[m[1]+"→"+m[2]] = v
	}
	return out
}

// Since are the counts of now that moved from before.
func Since(before, now map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// EpisodeRewards reads app's steps from the InfluxDB at base (database
// aware) with InfluxQL and sums each complete episode's rewards, in
// episode order.
func EpisodeRewards(ctx context.Context, t *testing.T, base, app string) []float64 {
	t.Helper()
	q := fmt.Sprintf(`SELECT "reward", "t", "done" FROM "steps" WHERE "app" = '%s'`, app)
	body, err := Get(ctx, base+"/query?db=aware&q="+url.QueryEscape(q))
	require.NoError(t, err)
	var res struct {
		Results []struct {
			Series []struct {
				Columns []string `json:"columns"`
				Values  [][]any  `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res), body)
	var out []float64
	sum := 0.0
	for _, r := range res.Results {
		for _, s := range r.Series {
			col := map[string]int{}
			for i, c := range s.Columns {
				col[c] = i
			}
			for _, v := range s.Values {
				sum += v[col["reward"]].(float64)
				if done, _ := v[col["done"]].(bool); done {
					out = append(out, sum)
					sum = 0
				}
			}
		}
	}
	return out
}
