package manifests_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/testbed/manifests"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func apps(t *testing.T, n int) []generator.App {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = n, 1
	a, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	return a
}

func creds() manifests.Credentials {
	return manifests.Credentials{ObjectStoreAccessKey: "access", ObjectStoreSecretKey: "secret", PostgresPassword: "pw"}
}

func TestBuildGolden(t *testing.T) {
	o := manifests.DefaultOptions()
	o.Apps = apps(t, 2)
	o, err := o.WithDefaults()
	require.NoError(t, err)
	sets, err := manifests.Build(o, creds())
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, manifests.WriteYAML(&buf, sets))
	golden := filepath.Join("testdata", "testbed.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), buf.String())
}

func TestBuildObjects(t *testing.T) {
	o := manifests.DefaultOptions()
	o.Apps = apps(t, 3)
	o, err := o.WithDefaults()
	require.NoError(t, err)
	sets, err := manifests.Build(o, creds())
	require.NoError(t, err)
	seen := map[string]string{}
	kinds := map[string]int{}
	var order []string
	for _, s := range sets {
		order = append(order, s.Component)
		for _, obj := range s.Objects {
			gvk := manifests.GVK(obj)
			require.NotEmpty(t, gvk.Kind, "%s: object without kind", s.Component)
			require.NotEmpty(t, gvk.Version, "%s: object without apiVersion", s.Component)
			k := manifests.Key(obj)
			require.NotContains(t, seen, k, "%s in %s and %s", k, seen[k], s.Component)
			seen[k] = s.Component
			kinds[gvk.Kind]++
			m, err := manifests.ToMap(obj)
			require.NoError(t, err)
			assert.NotContains(t, m, "status", k)
			assert.NotContains(t, m["metadata"], "creationTimestamp", k)
			if gvk.Kind == "CustomResourceDefinition" && obj.GetName() == "multidimpodautoscalers.autoscaling.aware.dev" {
				// The MPA's status subresource: an empty object that matters.
				v := m["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
				assert.Equal(t, map[string]any{"status": map[string]any{}}, v["subresources"], k)
			}
		}
	}
	assert.Equal(t, []string{"namespaces", "mpa", "trajectory-db", "external-services", "monitoring", "apps", "load", "dashboards"}, order)
	assert.Equal(t, 3, kinds["MultidimPodAutoscaler"])
	assert.Equal(t, 3, kinds["Job"])
	assert.Equal(t, 3+6, kinds["Deployment"], "apps, controller, agents, prometheus, kube-state-metrics, metrics-server, grafana")
	assert.Equal(t, 3, kinds["StatefulSet"], "influxdb, object store, postgres")
	assert.Equal(t, 2, kinds["CustomResourceDefinition"], "the MPA and its checkpoints")

	// The local control plane's testbed: no pods that would need to run.
	o.Components = manifests.Components{}
	sets, err = manifests.Build(o, manifests.Credentials{})
	require.NoError(t, err, "credentials are needed only with the external services")
	var names []string
	for _, s := range sets {
		names = append(names, s.Component)
		for _, obj := range s.Objects {
			kind := manifests.GVK(obj).Kind
			if kind == "Deployment" {
				assert.Equal(t, "aware-apps", obj.GetNamespace(), "only the apps' Deployments: %s", manifests.Key(obj))
			}
			assert.NotContains(t, []string{"StatefulSet", "Job"}, kind)
		}
	}
	assert.Equal(t, []string{"namespaces", "mpa", "apps"}, names)
}

func TestPrometheusConfigIsYAML(t *testing.T) {
	o, err := manifests.Options{}.WithDefaults()
	require.NoError(t, err)
	var cfg struct {
		ScrapeConfigs []struct {
			JobName     string `json:"job_name"`
			HonorLabels bool   `json:"honor_labels"`
		} `json:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(manifests.PrometheusConfig(o)), &cfg))
	jobs := map[string]bool{}
	for _, j := range cfg.ScrapeConfigs {
		jobs[j.JobName] = j.HonorLabels
	}
	assert.Equal(t, map[string]bool{"workloads": false, "cadvisor": false, "kube-state-metrics": true, "aware": false}, jobs)
}

func TestOptionsErrors(t *testing.T) {
	a := apps(t, 1)
	for _, tc := range []struct {
		name string
		o    manifests.Options
		want string
	}{
		{"bad namespace", manifests.Options{Namespace: "Aware_System"}, `namespace "Aware_System"`},
		{"negative scale", manifests.Options{LoadScale: -1}, "loadScale -1"},
		{"short step", manifests.Options{Step: 100e6}, "step 100ms"},
		{"duplicate app", manifests.Options{Apps: []generator.App{a[0], a[0]}}, "apps[1]: app-0001 appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.WithDefaults()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	o, err := manifests.DefaultOptions().WithDefaults()
	require.NoError(t, err)
	_, err = manifests.Build(o, manifests.Credentials{ObjectStoreAccessKey: "a"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "objectStoreSecretKey is empty")
	assert.Contains(t, err.Error(), "postgresPassword is empty")
}
