package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

const testToken = "s3cret-t0ken_value"

// badSpaceEnv has an observation space with a missing high bound.
type badSpaceEnv struct{ constEnv }

func (badSpaceEnv) ObservationSpace() gym.Space {
	return gym.Space{Names: []string{"a"}, Low: []float64{0}}
}

func TestNewServerValidation(t *testing.T) {
	ok := map[string]gym.Env{"a": constEnv{}}
	for _, tc := range []struct {
		name  string
		envs  map[string]gym.Env
		token string
		opts  []Option
		want  string
	}{
		{"empty token", ok, "", nil, "refusing to serve without a token"},
		{"token with a space", ok, "abc def", nil, "token has a space, control or non-ASCII character at byte 3"},
		{"token with a newline", ok, "abc\n", nil, "at byte 3"},
		{"no envs", nil, testToken, nil, "no environments"},
		{"slash in name", map[string]gym.Env{"a/b": constEnv{}}, testToken, nil, `environment name "a/b"`},
		{"empty name", map[string]gym.Env{"": constEnv{}}, testToken, nil, `environment name ""`},
		{"dot name", map[string]gym.Env{"..": constEnv{}}, testToken, nil, `environment name ".."`},
		{"nil env", map[string]gym.Env{"a": nil}, testToken, nil, `environment "a" is nil`},
		{"bad space", map[string]gym.Env{"a": badSpaceEnv{}}, testToken, nil, `environment "a": observation space: 1 names, 1 lows, 0 highs`},
		{"zero body", ok, testToken, []Option{WithMaxBodyBytes(0)}, "max body bytes 0"},
		{"negative timeout", ok, testToken, []Option{WithTimeout(-time.Second)}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServer(tc.envs, tc.token, tc.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
	s, err := NewServer(map[string]gym.Env{"b": constEnv{}, "a.1": constEnv{}, "A_2-x": constEnv{}}, "", WithInsecure())
	require.NoError(t, err)
	assert.Equal(t, []string{"A_2-x", "a.1", "b"}, s.Names())
}

// req is one request to the handler.
type req struct {
	method, path, body string
	auth               string // the Authorization header; "-" for none
}

// do serves r with s and returns the recorder.
func do(t *testing.T, s http.Handler, r req) *httptest.ResponseRecorder {
	t.Helper()
	hr := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	switch r.auth {
	case "":
		hr.Header.Set("Authorization", "Bearer "+testToken)
	case "-":
	default:
		hr.Header.Set("Authorization", r.auth)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, hr)
	return w
}

var (
	resetA = req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": 3}`}
	stepA  = req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [2, 0.5, 1e9]}`}
)

func TestHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      func() *fakeEnv // environment "a" (default: a plain fakeEnv)
		opts     []Option
		before   []req // must succeed
		r        req
		status   int
		want     string // substring of the error, or of the body on success
		header   [2]string
		afterErr *req // then this request …
		after    int  // … gets this status
		afterMsg string
	}{
		{name: "healthz needs no token", r: req{method: "GET", path: "/healthz", auth: "-"}, status: 200, want: `{"status":"ok"}`},
		{name: "healthz HEAD", r: req{method: "HEAD", path: "/healthz", auth: "-"}, status: 200},
		{name: "healthz POST", r: req{method: "POST", path: "/healthz"}, status: 405, want: "method POST is not allowed on /healthz; use GET or HEAD", header: [2]string{"Allow", "GET, HEAD"}},
		{name: "no token", r: req{method: "GET", path: "/v1/envs", auth: "-"}, status: 401, want: `missing Authorization header; want "Authorization: Bearer <token>"`, header: [2]string{"WWW-Authenticate", `Bearer realm="aware-env"`}},
		{name: "basic auth", r: req{method: "GET", path: "/v1/envs", auth: "Basic dXNlcjpwdw=="}, status: 401, want: "not a bearer token"},
		{name: "bearer without token", r: req{method: "GET", path: "/v1/envs", auth: "Bearer"}, status: 401, want: "not a bearer token"},
		{name: "wrong token", r: req{method: "GET", path: "/v1/envs", auth: "Bearer nope"}, status: 401, want: "invalid token"},
		{name: "token prefix", r: req{method: "GET", path: "/v1/envs", auth: "Bearer " + testToken[:5]}, status: 401, want: "invalid token"},
		{name: "token needed for unknown paths", r: req{method: "GET", path: "/v1/envs/zzz/spaces", auth: "-"}, status: 401},
		{name: "lower-case scheme", r: req{method: "GET", path: "/v1/envs", auth: "bearer " + testToken}, status: 200, want: `{"envs":["a","b"]}`},
		{name: "list", r: req{method: "GET", path: "/v1/envs"}, status: 200, want: `{"envs":["a","b"]}`},
		{name: "list POST", r: req{method: "POST", path: "/v1/envs"}, status: 405, want: "use GET", header: [2]string{"Allow", "GET"}},
		{name: "unknown version", r: req{method: "GET", path: "/v2/envs"}, status: 404, want: "no endpoint /v2/envs; the endpoints are GET /healthz, GET /v1/envs"},
		{name: "trailing slash", r: req{method: "GET", path: "/v1/envs/"}, status: 404, want: "no endpoint /v1/envs/"},
		{name: "too deep", r: req{method: "GET", path: "/v1/envs/a/spaces/x"}, status: 404, want: "no endpoint"},
		{name: "unknown op", r: req{method: "POST", path: "/v1/envs/a/frobnicate"}, status: 404, want: `no endpoint "frobnicate" for environment "a"; want spaces, reset or step`},
		{name: "unknown env", r: req{method: "POST", path: "/v1/envs/nope/step", body: `{"action":[1,1,1]}`}, status: 404, want: `unknown environment "nope"; this server has "a", "b"`},
		{name: "spaces", r: req{method: "GET", path: "/v1/envs/a/spaces"}, status: 200,
			want: `{"observation":{"names":["seed","step"],"low":[0,0],"high":[10000000000000000000,1000000000],"dims":2},"action":{"names":["replicas","cpu_cores","memory_bytes"],"low":[1,0.128,33554432],"high":[20,2.048,3221225472],"dims":3}}`},
		{name: "spaces POST", r: req{method: "POST", path: "/v1/envs/a/spaces"}, status: 405, header: [2]string{"Allow", "GET"}},
		{name: "reset GET", r: req{method: "GET", path: "/v1/envs/a/reset"}, status: 405, want: "method GET is not allowed on /v1/envs/a/reset; use POST", header: [2]string{"Allow", "POST"}},
		{name: "step GET", r: req{method: "GET", path: "/v1/envs/a/step"}, status: 405, header: [2]string{"Allow", "POST"}},
		{name: "reset", r: resetA, status: 200, want: `{"obs":[3,0],"info":{"step":0,"metrics":{"replicas":0,`},
		{name: "reset with empty body", r: req{method: "POST", path: "/v1/envs/a/reset"}, status: 200, want: `"seed":1}`},
		{name: "reset with {}", r: req{method: "POST", path: "/v1/envs/a/reset", body: "{}"}, status: 200, want: `"seed":1}`},
		{name: "reset without seed continues", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/reset", body: `{}`}, status: 200, want: `"obs":[4,0]`},
		{name: "largest seed", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": 18446744073709551615}`}, status: 200, want: `"seed":18446744073709551615}`},
		{name: "malformed JSON", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": }`}, status: 400, want: "malformed JSON at byte 10: invalid character '}' looking for beginning of value"},
		{name: "negative seed", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": -1}`}, status: 400, want: `field "seed" at byte 11: got number -1, want an integer from 0 to 18446744073709551615`},
		{name: "fractional seed", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": 1.5}`}, status: 400, want: `field "seed" at byte 12: got number 1.5, want an integer`},
		{name: "string seed", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": "1"}`}, status: 400, want: `field "seed" at byte 12: got string, want an integer`},
		{name: "misspelt field", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"sed": 1}`}, status: 400, want: `unknown field "sed"; want an object like {"seed": 1}`},
		{name: "array body", r: req{method: "POST", path: "/v1/envs/a/reset", body: `[1]`}, status: 400, want: `request body is a JSON array; want an object like {"seed": 1}`},
		{name: "trailing data", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": 1} {}`}, status: 400, want: "trailing data after the object at byte 13"},
		{name: "truncated body", r: req{method: "POST", path: "/v1/envs/a/reset", body: `{"seed": 1`}, status: 400, want: "the body ends early, at byte 10"},
		{name: "reset fails", env: func() *fakeEnv { return &fakeEnv{resetErr: errBoom} }, r: resetA, status: 500, want: `reset of environment "a" failed: boom`,
			afterErr: &stepA, after: 409, afterMsg: `environment "a" must be reset: its last reset failed (boom)`},
		{name: "step before reset", r: stepA, status: 409, want: `environment "a" has not been reset; POST /v1/envs/a/reset first`},
		{name: "step", before: []req{resetA}, r: stepA, status: 200,
			want: `{"obs":[3,1],"reward":2,"terminated":false,"truncated":false,"info":{"step":1,"metrics":{"replicas":2,"ready_replicas":0,"cpu_limit":0.5,"memory_limit":1000000000,`},
		{name: "step SP fields", before: []req{resetA}, r: stepA, status: 200, want: `"oom_kills":0},"sp":0.5,"slo_violated":true}}`},
		{name: "truncated step", before: []req{resetA, stepA, stepA}, r: stepA, status: 200, want: `"truncated":true`},
		{name: "empty step body", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step"}, status: 400, want: `request body is empty; want a JSON object like {"action": [v0, v1, ...]}`},
		{name: "missing action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{}`}, status: 400, want: `field "action" is missing or null; want an object like {"action": [v0, v1, ...]} with 3 values (replicas, cpu_cores, memory_bytes)`},
		{name: "null action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": null}`}, status: 400, want: `field "action" is missing or null`},
		{name: "scalar action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": 5}`}, status: 400, want: `field "action" at byte 12: got number, want an array of 3 numbers`},
		{name: "short action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, 0.5]}`}, status: 400, want: "action has 2 values, the action space has 3 (replicas, cpu_cores, memory_bytes)"},
		{name: "long action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, 0.5, 1, 1]}`}, status: 400, want: "action has 4 values, the action space has 3"},
		{name: "NaN action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, "NaN", 1e9]}`}, status: 400, want: "action[1] (cpu_cores) is NaN; want a finite number"},
		{name: "-Inf action", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, 1, "-Infinity"]}`}, status: 400, want: "action[2] (memory_bytes) is -Inf; want a finite number"},
		{name: "bare NaN", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, NaN, 1e9]}`}, status: 400,
			want: `malformed JSON at byte 16: invalid character 'N' looking for beginning of value; NaN and Infinity are not JSON`},
		{name: "bare -Infinity", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [-Infinity, 1, 1e9]}`}, status: 400, want: "NaN and Infinity are not JSON"},
		{name: "null value", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, 1, null]}`}, status: 400, want: "action[2] (memory_bytes) is null; want a number"},
		{name: "huge value", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1e400, 1, 1]}`}, status: 400, want: "action[0] (replicas) = 1e400 is out of the float64 range"},
		{name: "string value", before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, "fast", 1]}`}, status: 400, want: `action[1] (cpu_cores) is the string "fast"; want a number`},
		{name: "body too large", opts: []Option{WithMaxBodyBytes(64)}, before: []req{resetA}, r: req{method: "POST", path: "/v1/envs/a/step", body: `{"action": [1, 1, 1` + strings.Repeat(" ", 100) + `]}`}, status: 413, want: "request body exceeds the limit of 64 bytes"},
		{name: "step fails", env: func() *fakeEnv { return &fakeEnv{stepErr: errBoom} }, before: []req{resetA}, r: stepA, status: 500, want: `step of environment "a" failed: boom`,
			afterErr: &stepA, after: 409, afterMsg: `environment "a" must be reset: its last step failed (boom)`},
		{name: "reset after failed step", env: func() *fakeEnv { return &fakeEnv{stepErr: errBoom} }, before: []req{resetA}, r: stepA, status: 500,
			afterErr: &resetA, after: 200},
		{name: "short observation", env: func() *fakeEnv { return &fakeEnv{shortObs: true} }, before: []req{resetA}, r: stepA, status: 500,
			want: `step of environment "a" returned 1 observation values, its observation space has 2`, afterErr: &stepA, after: 409, afterMsg: "malformed observation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &fakeEnv{}
			if tc.env != nil {
				a = tc.env()
			}
			s, err := NewServer(map[string]gym.Env{"a": a, "b": &fakeEnv{}}, testToken, tc.opts...)
			require.NoError(t, err)
			for _, b := range tc.before {
				w := do(t, s, b)
				require.Equal(t, 200, w.Code, "%s %s: %s", b.method, b.path, w.Body)
			}
			w := do(t, s, tc.r)
			assert.Equal(t, tc.status, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			if tc.r.method != "HEAD" {
				if tc.status == 200 {
					assert.Contains(t, w.Body.String(), tc.want)
					assert.True(t, json.Valid(w.Body.Bytes()), w.Body.String())
				} else {
					var e ErrorResponse
					require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
					assert.NotEmpty(t, e.Error)
					assert.Contains(t, e.Error, tc.want)
				}
			}
			if tc.header[0] != "" {
				assert.Equal(t, tc.header[1], w.Header().Get(tc.header[0]))
			}
			if tc.afterErr != nil {
				w := do(t, s, *tc.afterErr)
				assert.Equal(t, tc.after, w.Code, w.Body.String())
				var e ErrorResponse
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
				assert.Contains(t, e.Error, tc.afterMsg)
			}
		})
	}
}

func TestInsecureServer(t *testing.T) {
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, "", WithInsecure())
	require.NoError(t, err)
	w := do(t, s, req{method: "GET", path: "/v1/envs", auth: "-"})
	assert.Equal(t, 200, w.Code)
	// With a token, WithInsecure does not switch authentication off.
	s, err = NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithInsecure())
	require.NoError(t, err)
	assert.Equal(t, 401, do(t, s, req{method: "GET", path: "/v1/envs", auth: "-"}).Code)
}

// TestLogging checks requests are logged at debug, failures at warn, and
// the token never.
func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithLogger(log))
	require.NoError(t, err)
	do(t, s, resetA)
	do(t, s, req{method: "GET", path: "/v1/envs", auth: "Bearer " + testToken + "x"})
	do(t, s, req{method: "GET", path: "/v1/envs", auth: "Basic " + testToken})
	out := buf.String()
	assert.NotContains(t, out, testToken)
	assert.NotContains(t, out, testToken[:8])
	assert.Contains(t, out, `level=DEBUG msg="env request" method=POST path=/v1/envs/a/reset op=reset status=200`)
	assert.Contains(t, out, `level=WARN msg="env request failed" method=GET path=/v1/envs op=auth status=401`)
	assert.Contains(t, out, `error="invalid token"`)
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithMetrics(reg))
	require.NoError(t, err)
	do(t, s, resetA)
	do(t, s, stepA)
	do(t, s, stepA)
	do(t, s, req{method: "POST", path: "/v1/envs/zzz/step"})
	assert.Equal(t, 2.0, testutil.ToFloat64(s.metrics.requests.WithLabelValues("a", "step", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(s.metrics.requests.WithLabelValues("a", "reset", "200")))
	assert.Equal(t, 1.0, testutil.ToFloat64(s.metrics.requests.WithLabelValues("", "step", "404")), "unknown names are not labels")
	n, err := testutil.GatherAndCount(reg, "aware_env_request_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "one histogram per operation")
	_, err = NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithMetrics(reg))
	assert.ErrorContains(t, err, "register metrics")
}

// serve starts s on a loopback port for the test.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

func post(ctx context.Context, url, body string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultClient.Do(hr)
}

// TestConcurrentEnvs steps two environments at once: each step waits
// until the other has started, which deadlocks if the server serialised
// different environments.
func TestConcurrentEnvs(t *testing.T) {
	entered := make(chan struct{}, 2)
	both := make(chan struct{})
	var once sync.Once
	arrived := make(chan struct{}, 2)
	wait := func(ctx context.Context) error {
		arrived <- struct{}{}
		if len(arrived) == 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the other environment never stepped concurrently")
		}
	}
	a, b := &fakeEnv{enter: entered, wait: wait}, &fakeEnv{enter: entered, wait: wait}
	s, err := NewServer(map[string]gym.Env{"a": a, "b": b}, testToken)
	require.NoError(t, err)
	url := serve(t, s)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		resp, err := post(ctx, url+"/v1/envs/"+name+"/reset", `{"seed": 1}`)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, name := range []string{"a", "b"} {
		wg.Go(func() {
			resp, err := post(ctx, url+"/v1/envs/"+name+"/step", `{"action": [1, 1, 1e9]}`)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	assert.Equal(t, []int{200, 200}, codes)
}

// TestSerialisedEnv hammers one environment from many goroutines: the
// environment never sees two calls at once (and the race detector sees no
// race on its unguarded fields).
func TestSerialisedEnv(t *testing.T) {
	env := &fakeEnv{wait: func(context.Context) error { time.Sleep(200 * time.Microsecond); return nil }}
	s, err := NewServer(map[string]gym.Env{"a": env}, testToken)
	require.NoError(t, err)
	url := serve(t, s)
	ctx := context.Background()
	resp, err := post(ctx, url+"/v1/envs/a/reset", `{"seed": 1}`)
	require.NoError(t, err)
	resp.Body.Close()
	const workers, steps = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range steps {
				body := `{"action": [1, 1, 1e9]}`
				path := "/step"
				if i == 7 && w%2 == 0 {
					body, path = fmt.Sprintf(`{"seed": %d}`, w), "/reset"
				}
				resp, err := post(ctx, url+"/v1/envs/a"+path, body)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), env.maxInFlight.Load())
	assert.Equal(t, int32(1+workers*steps), env.calls.Load())
}

// TestCancelledClientStopsStep: the request's context reaches Step, so a
// client that gives up stops the step, and the environment then needs a
// reset.
func TestCancelledClientStopsStep(t *testing.T) {
	seen := make(chan error, 1)
	entered := make(chan struct{}, 1)
	env := &fakeEnv{enter: entered, wait: waitCtx(seen)}
	s, err := NewServer(map[string]gym.Env{"a": env}, testToken)
	require.NoError(t, err)
	url := serve(t, s)
	resp, err := post(context.Background(), url+"/v1/envs/a/reset", `{}`)
	require.NoError(t, err)
	resp.Body.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		resp, err := post(ctx, url+"/v1/envs/a/step", `{"action": [1, 1, 1e9]}`)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the step did not see the cancellation")
	}
	assert.ErrorIs(t, <-done, context.Canceled)

	env.wait = nil // the next call must not block
	resp, err = post(context.Background(), url+"/v1/envs/a/step", `{"action": [1, 1, 1e9]}`)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e ErrorResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, `environment "a" must be reset: its last step was cancelled`, e.Error)
}

// TestTimeout: a step that overruns WithTimeout gets 504, as does a call
// still waiting for the environment when its time is up.
func TestTimeout(t *testing.T) {
	seen := make(chan error, 1)
	env := &fakeEnv{wait: waitCtx(seen)}
	s, err := NewServer(map[string]gym.Env{"a": env}, testToken, WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, 200, do(t, s, resetA).Code)
	w := do(t, s, stepA)
	assert.Equal(t, http.StatusGatewayTimeout, w.Code)
	assert.Contains(t, w.Body.String(), `step of environment \"a\" did not finish in time: context deadline exceeded`)
	assert.ErrorIs(t, <-seen, context.DeadlineExceeded)
	w = do(t, s, stepA)
	assert.Equal(t, http.StatusConflict, w.Code)
	assert.Contains(t, w.Body.String(), "its last step ran out of time")

	// A call that ignores its context holds the environment; another
	// call times out waiting for it.
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	env.enter = entered
	env.wait = func(context.Context) error { <-release; return nil }
	require.Equal(t, 200, do(t, s, resetA).Code)
	first := make(chan int, 1)
	go func() { first <- do(t, s, stepA).Code }()
	<-entered
	w = do(t, s, stepA)
	assert.Equal(t, http.StatusGatewayTimeout, w.Code)
	assert.Contains(t, w.Body.String(), "timed out waiting for the environment's previous call to finish")
	close(release)
	assert.Equal(t, 200, <-first)
	env.enter = nil
	assert.Equal(t, 200, do(t, s, stepA).Code, "waiting in vain does not break the environment")
}

func TestServe(t *testing.T) {
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 5*time.Second) }()
	url := "http://" + ln.Addr().String()
	names, err := List(context.Background(), url, testToken)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, names)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	_, err = List(context.Background(), url, testToken)
	assert.Error(t, err, "stopped")
}
