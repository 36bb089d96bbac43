package influxdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/influxdb"
)

// start runs influxd in a temporary directory, skipping the test when it is
// not installed (failing instead when CI=true), and stops it at cleanup.
func start(t *testing.T, dir string, opts ...influxdb.Option) *influxdb.Local {
	t.Helper()
	l, err := influxdb.Start(t.Context(), dir, opts...)
	if errors.Is(err, influxdb.ErrNoBinary) {
		clustertest.Missing(t, "%v (apt-get install influxdb)", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Stop()) })
	return l
}

func query(t *testing.T, base, db, q string) string {
	t.Helper()
	v := url.Values{"q": {q}}
	if db != "" {
		v.Set("db", db)
	}
	resp, err := http.PostForm(base+"/query", v)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

func write(t *testing.T, base, db, lines string) {
	t.Helper()
	resp, err := http.Post(base+"/write?precision=ns&db="+url.QueryEscape(db), "text/plain", strings.NewReader(lines))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", b)
}

func ping(base string) error {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(base + "/ping")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return errors.New(resp.Status)
	}
	return nil
}

// values extracts the values of the first series of the first result.
func values(t *testing.T, body string) [][]any {
	t.Helper()
	var r struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
			Error string `json:"error"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	require.Len(t, r.Results, 1, body)
	require.Empty(t, r.Results[0].Error)
	if len(r.Results[0].Series) == 0 {
		return nil
	}
	return r.Results[0].Series[0].Values
}

func TestStartWriteQueryRestart(t *testing.T) {
	dir := t.TempDir()
	l := start(t, dir)
	base := l.URL()
	assert.Equal(t, "http://127.0.0.1:"+itoa(l.Port()), base)
	assert.True(t, l.Running())
	require.NoError(t, ping(base))

	conf, err := os.ReadFile(filepath.Join(dir, influxdb.ConfigFile))
	require.NoError(t, err)
	for _, want := range []string{"reporting-disabled = true", "reporting-enabled = false",
		`bind-address = "127.0.0.1:` + itoa(l.Port()) + `"`, "query-log-enabled = false", "store-enabled = false"} {
		assert.Contains(t, string(conf), want)
	}
	assert.NotContains(t, string(conf), "[[udp]]")
	assert.NotContains(t, string(conf), "[[graphite]]")

	query(t, base, "", `CREATE DATABASE "itest"`)
	write(t, base, "itest", "cpu,host=a\\ b value=1.5 1000000000\ncpu,host=c value=2.5 2000000000\n")
	got := values(t, query(t, base, "itest", `SELECT "value" FROM "cpu" ORDER BY time`))
	require.Len(t, got, 2)
	assert.Equal(t, 1.5, got[0][1])
	assert.Equal(t, 2.5, got[1][1])

	require.NoError(t, l.Stop())
	require.NoError(t, l.Stop(), "Stop is idempotent")
	assert.False(t, l.Running())
	assert.Error(t, ping(base), "stopped server still answers")

	require.NoError(t, l.Restart(t.Context()))
	assert.Equal(t, base, l.URL(), "restart keeps the port")
	err = l.Restart(t.Context())
	assert.ErrorIs(t, err, influxdb.ErrRunning)
	got = values(t, query(t, base, "itest", `SELECT "value" FROM "cpu" ORDER BY time`))
	assert.Len(t, got, 2, "data survives a restart")
}

func TestStartWithPortReusesDir(t *testing.T) {
	dir := t.TempDir()
	l := start(t, dir)
	port := l.Port()
	query(t, l.URL(), "", `CREATE DATABASE "again"`)
	write(t, l.URL(), "again", "m v=7i 1\n")
	require.NoError(t, l.Stop())

	l2 := start(t, dir, influxdb.WithPort(port))
	assert.Equal(t, port, l2.Port())
	got := values(t, query(t, l2.URL(), "again", `SELECT "v" FROM "m"`))
	require.Len(t, got, 1)
	assert.EqualValues(t, 7, got[0][1])

	// A second server cannot take the same port.
	_, err := influxdb.Start(t.Context(), t.TempDir(), influxdb.WithPort(port), influxdb.WithStartTimeout(20*time.Second))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1:"+itoa(port))
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts []influxdb.Option
		is   error
		msg  string
	}{
		{"missing binary", []influxdb.Option{influxdb.WithBinary("/nonexistent/influxd")}, influxdb.ErrNoBinary, "/nonexistent/influxd"},
		{"directory as binary", []influxdb.Option{influxdb.WithBinary(os.TempDir())}, influxdb.ErrNoBinary, "not an executable"},
		{"bad port", []influxdb.Option{influxdb.WithPort(70000)}, nil, "WithPort(70000)"},
		{"bad timeout", []influxdb.Option{influxdb.WithStartTimeout(-time.Second)}, nil, "WithStartTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := influxdb.Start(ctx, t.TempDir(), tc.opts...)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestEnvBinary(t *testing.T) {
	t.Setenv(influxdb.EnvBinary, "/nonexistent/from-env")
	_, err := influxdb.Start(t.Context(), t.TempDir())
	assert.ErrorIs(t, err, influxdb.ErrNoBinary)
	assert.Contains(t, err.Error(), influxdb.EnvBinary)
}

func itoa(i int) string { return strconv.Itoa(i) }
