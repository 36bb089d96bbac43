package remote

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// FuzzServer feeds the server any method, path and body, with and without
// the token: every answer is a well-formed response below 500 (a client's
// mistake is a 4xx naming it, never a server error or a panic), an error
// answer is JSON, and the server still serves a valid step afterwards.
func FuzzServer(f *testing.F) {
	for _, s := range []struct {
		method, path, body string
		auth               bool
	}{
		{"POST", "/v1/envs/a/reset", `{"seed":3}`, true},
		{"POST", "/v1/envs/a/step", `{"action":[2,0.5,1073741824]}`, true},
		{"POST", "/v1/envs/a/step", `{"action":[1e400,"x"]}`, true},
		{"POST", "/v1/envs/a/step", `{"action":[NaN]}`, true},
		{"GET", "/v1/envs/a/spaces", "", false},
		{"GET", "/v1/envs", "", true},
		{"PUT", "/v1/envs/../../etc", strings.Repeat("[", 4096), true},
		{"POST", "/v1/envs/b/reset", `{"seed":-1}`, true},
	} {
		f.Add(s.method, s.path, []byte(s.body), s.auth)
	}
	srv, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithMaxBodyBytes(1<<12))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, method, path string, body []byte, auth bool) {
		if !strings.HasPrefix(path, "/") {
			return
		}
		req, err := http.NewRequest(method, "http://env.test"+path, bytes.NewReader(body))
		if err != nil {
			return // not a request an HTTP client sends
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		require.Less(t, rec.Code, 500, "%s %s %q: %d %s", method, path, body, rec.Code, rec.Body)
		if rec.Code >= 400 {
			require.Contains(t, rec.Header().Get("Content-Type"), "json", "%s %s: an error answer is JSON", method, path)
		}

		// The server goes on serving.
		for _, call := range []struct{ path, body string }{{"/v1/envs/a/reset", `{"seed":1}`}, {"/v1/envs/a/step", `{"action":[2,0.5,1073741824]}`}} {
			req := httptest.NewRequest(http.MethodPost, call.path, strings.NewReader(call.body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code, "%s after %s %s: %s", call.path, method, path, rec.Body)
		}
	})
}
