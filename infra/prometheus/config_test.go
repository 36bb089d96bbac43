package prometheus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestRender(t *testing.T) {
	s := defaults()
	for _, o := range []Option{
		WithScrapeInterval(500 * time.Millisecond),
		WithStaticTarget("app", "127.0.0.1:9000", ""),
		WithStaticTarget("app", "127.0.0.1:9001", "/metrics"),
		WithStaticTarget("app", "127.0.0.1:9001", ""), // duplicate address: ignored
		WithStaticTarget("twin", "127.0.0.1:9100", "/twin/metrics"),
		WithScrapeConfigYAML("- job_name: raw\n  honor_labels: true\n  static_configs: [{targets: ['127.0.0.1:9200']}]\n"),
	} {
		o(&s)
	}
	require.NoError(t, s.validate())
	b, err := render(s.interval, s.targets, s.rawYAML)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(b, &got))
	want := map[string]any{
		"global": map[string]any{"scrape_interval": "500ms", "scrape_timeout": "500ms", "evaluation_interval": "500ms"},
		"scrape_configs": []any{
			map[string]any{"job_name": "app", "metrics_path": "/metrics",
				"static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9000", "127.0.0.1:9001"}}}},
			map[string]any{"job_name": "twin", "metrics_path": "/twin/metrics",
				"static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9100"}}}},
			map[string]any{"job_name": "raw", "honor_labels": true,
				"static_configs": []any{map[string]any{"targets": []any{"127.0.0.1:9200"}}}},
		},
	}
	assert.Equal(t, want, got, string(b))
}

func TestRenderTimeoutCappedAt10s(t *testing.T) {
	b, err := render(time.Minute, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, string(b), "scrape_timeout: 10s")
	assert.Contains(t, string(b), "scrape_interval: 1m")
	assert.Contains(t, string(b), "scrape_configs: []")
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{"empty job", []Option{WithStaticTarget("", "127.0.0.1:1", "")}, `job name "" must be`},
		{"no port", []Option{WithStaticTarget("a", "127.0.0.1", "")}, `address "127.0.0.1" is not host:port`},
		{"no host", []Option{WithStaticTarget("a", ":80", "")}, `address ":80" is not host:port`},
		{"relative path", []Option{WithStaticTarget("a", "127.0.0.1:1", "metrics")}, `metrics path "metrics" must start with /`},
		{"path clash", []Option{WithStaticTarget("a", "127.0.0.1:1", "/x"), WithStaticTarget("a", "127.0.0.1:2", "/y")},
			`path "/y" differs from the job's "/x"`},
		{"zero interval", []Option{WithScrapeInterval(0)}, "WithScrapeInterval: 0s must be a positive whole number of milliseconds"},
		{"sub-ms interval", []Option{WithScrapeInterval(1500 * time.Microsecond)}, "whole number of milliseconds"},
		{"nil logger", []Option{WithLogger(nil)}, "WithLogger: nil logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := defaults()
			for _, o := range tc.opts {
				o(&s)
			}
			assert.ErrorContains(t, s.validate(), tc.wantErr)
		})
	}
}

func TestRenderRawErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []target
		raw     []string
		wantErr string
	}{
		{"not a sequence", nil, []string{"job_name: x"}, "WithScrapeConfigYAML #1: not a YAML sequence"},
		{"no job name", nil, []string{"- static_configs: []"}, "WithScrapeConfigYAML #1: entry 1 has no job_name"},
		{"duplicate with static", []target{{job: "a", path: "/metrics", addrs: []string{"127.0.0.1:1"}}},
			[]string{"- job_name: a"}, `job_name "a" is used twice`},
		{"duplicate raw", nil, []string{"- job_name: b", "- job_name: b"}, `job_name "b" is used twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(time.Second, tc.targets, tc.raw)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestSetAndRemoveTargets(t *testing.T) {
	l := &Local{}
	require.NoError(t, l.SetStaticTarget("a", "127.0.0.1:1", ""))
	require.NoError(t, l.SetStaticTarget("a", "127.0.0.1:2", "/other")) // replaces
	assert.Equal(t, []target{{job: "a", path: "/other", addrs: []string{"127.0.0.1:2"}}}, l.targets)
	assert.ErrorContains(t, l.SetStaticTarget("b", "nope", ""), `address "nope"`)
	assert.True(t, l.RemoveStaticJob("a"))
	assert.False(t, l.RemoveStaticJob("a"))
	assert.Empty(t, l.targets)
}
