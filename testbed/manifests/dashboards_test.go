package manifests_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// exported collects the metric names the project's code exports (the
// Name of every prometheus.*Opts under controller/ and workloads/), the
// cAdvisor and kube-state-metrics series the controller's queries read,
// and the trajectory store's InfluxDB measurements.
func exported(t *testing.T) (metrics, measurements map[string]bool) {
	t.Helper()
	root := filepath.Join("..", "..")
	nameRe := regexp.MustCompile(`Name:\s+"(aware_[a-z0-9_]+)"`)
	metrics = map[string]bool{}
	for _, dir := range []string{"controller", "workloads"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range nameRe.FindAllStringSubmatch(string(b), -1) {
				metrics[m[1]] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, metrics, "aware_controller_round_seconds", "the scan found the controller's metrics")
	queries, err := os.ReadFile(filepath.Join(root, "controller", "telemetry", "queries.go"))
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`\b(?:container|kube)_[a-z_]+`).FindAllString(string(queries), -1) {
		metrics[m] = true
	}
	store, err := os.ReadFile(filepath.Join(root, "controller", "trajectory", "influx_client.go"))
	require.NoError(t, err)
	measurements = map[string]bool{}
	for _, m := range regexp.MustCompile(`meas\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(store), -1) {
		measurements[m[1]] = true
	}
	require.Contains(t, measurements, "episodes")
	return metrics, measurements
}

// Every panel's query names only metrics or measurements the project
// exports (or reads from cAdvisor and kube-state-metrics), and names one.
func TestDashboardQueriesNameExportedSeries(t *testing.T) {
	metrics, measurements := exported(t)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(manifests.Dashboard, &d))
	require.NotEmpty(t, d.Panels)
	metricRe := regexp.MustCompile(`\b(?:aware|container|kube)_[a-z0-9_]+`)
	fromRe := regexp.MustCompile(`FROM\s+"(\w+)"`)
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			switch {
			case tg.Expr != "":
				names := metricRe.FindAllString(tg.Expr, -1)
				assert.NotEmpty(t, names, "%s: %s names no metric", p.Title, tg.Expr)
				for _, n := range names {
					base := n
					for _, suf := range []string{"_bucket", "_sum", "_count"} {
						if strings.HasSuffix(n, suf) && metrics[strings.TrimSuffix(n, suf)] {
							base = strings.TrimSuffix(n, suf)
						}
					}
					assert.True(t, metrics[base], "%s: %s is not exported by the project", p.Title, n)
				}
			case tg.Query != "":
				m := fromRe.FindStringSubmatch(tg.Query)
				if assert.NotNil(t, m, "%s: %s names no measurement", p.Title, tg.Query) {
					assert.True(t, measurements[m[1]], "%s: measurement %s is not the trajectory store's", p.Title, m[1])
				}
			default:
				t.Errorf("%s: a target without a query", p.Title)
			}
		}
	}
}
