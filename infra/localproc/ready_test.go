package localproc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitReady(t *testing.T) {
	refused := errors.New("connection refused")
	logPath := filepath.Join(t.TempDir(), "server.log")
	for _, tc := range []struct {
		name      string
		script    string
		opts      []Option
		readyAt   int // probe call that succeeds; 0: none
		timeout   time.Duration
		cancelled bool // ctx cancelled before the wait
		wantErr   []string
		wantIs    []error
	}{
		{name: "ready on third probe", script: "exec sleep 30", readyAt: 3},
		{name: "ready at once", script: "exec sleep 30", readyAt: 1},
		{name: "exits before ready", script: "echo boom >&2; exit 3", opts: []Option{WithTail(100)},
			timeout: 30 * time.Second, wantIs: []error{ErrExited},
			wantErr: []string{"/bin/sh exited during start (exit status 3); output:\nboom"}},
		{name: "exits cleanly before ready", script: "echo bye", opts: []Option{WithLogFile(logPath)},
			timeout: 30 * time.Second, wantIs: []error{ErrExited},
			wantErr: []string{"exited during start (exit status 0); log " + logPath + ":\nbye"}},
		{name: "timeout", script: "echo starting; exec sleep 30", opts: []Option{WithTail(100)},
			timeout: 500 * time.Millisecond, wantIs: []error{context.DeadlineExceeded, refused},
			wantErr: []string{"/bin/sh not ready: context deadline exceeded (last probe: connection refused); output:\nstarting"}},
		{name: "cancelled", script: "exec sleep 30", cancelled: true,
			wantIs: []error{context.Canceled, refused}, wantErr: []string{"not ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("/bin/sh", []string{"-c", tc.script}, tc.opts...)
			require.NoError(t, err)
			stopAtEnd(t, p)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancelled {
				cancel()
			}
			defer cancel()
			calls := 0
			err = p.WaitReady(ctx, tc.timeout, 10*time.Millisecond, func(context.Context) error {
				calls++
				if calls == tc.readyAt {
					return nil
				}
				return refused
			})
			if tc.wantIs == nil && tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.readyAt, calls)
				assert.False(t, p.Exited())
				return
			}
			require.Error(t, err)
			for _, w := range tc.wantIs {
				assert.ErrorIs(t, err, w)
			}
			for _, w := range tc.wantErr {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestWaitReadyBadInterval(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"30"})
	require.NoError(t, err)
	stopAtEnd(t, p)
	err = p.WaitReady(t.Context(), time.Second, 0, func(context.Context) error { return nil })
	assert.ErrorContains(t, err, "interval must be positive, got 0s")
}

func TestWaitReadyHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	p, err := Start("/bin/sleep", []string{"30"})
	require.NoError(t, err)
	stopAtEnd(t, p)
	require.NoError(t, p.WaitReady(t.Context(), 10*time.Second, 10*time.Millisecond, HTTPProbe(nil, srv.URL, http.StatusOK)))
	assert.False(t, p.Exited(), "ready while it runs")
}

func TestHTTPProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name       string
		url        string
		wantStatus int
		wantErr    string
	}{
		{"ok", srv.URL + "/ok", http.StatusOK, ""},
		{"wrong status", srv.URL + "/busy", http.StatusOK, "probe " + srv.URL + "/busy: status 503, want 200"},
		{"any status", srv.URL + "/busy", 0, ""},
		{"not listening", closed.URL, 0, "connection refused"},
		{"bad url", "://x", 0, "probe ://x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := HTTPProbe(nil, tc.url, tc.wantStatus)(t.Context())
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}
