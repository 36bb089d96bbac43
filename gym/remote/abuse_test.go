package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// TestServeUnderAbuse serves one environment while clients abuse it at
// once: slow clients that send a request's header and then stall in its
// body, clients that send random bodies to every endpoint, and clients
// that send bodies far over the limit. A well-behaved client resets and
// steps the same environment throughout and is answered every time; the
// garbage gets 4xx errors in JSON, the huge bodies 413, the slow clients
// are cut off at the read timeout, and afterwards the server holds no more
// goroutines than before (bounded memory: nothing of the abusers stays).
func TestServeUnderAbuse(t *testing.T) {
	s, err := NewServer(map[string]gym.Env{"a": &fakeEnv{}}, testToken, WithMaxBodyBytes(1<<14))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	base := runtime.NumGoroutine()
	go func() { done <- s.Serve(ctx, ln, 5*time.Second, WithReadTimeout(time.Second), WithMaxConns(128)) }()
	addr := ln.Addr().String()
	url := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	var wg sync.WaitGroup
	errs := make(chan error, 1000)

	// Slow clients: a step's header, one byte of its 100-byte body, then
	// nothing. Each must be answered (or closed) within a bound, not held.
	const slow = 40
	for i := range slow {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /v1/envs/a/step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{", testToken)
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case err == nil:
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.StatusCode >= 500 {
					errs <- fmt.Errorf("slow client %d: status %d, want 4xx", i, resp.StatusCode)
				}
			case isTimeout(err):
				errs <- fmt.Errorf("slow client %d: still held after 30 s", i)
			}
			// Otherwise the server closed the connection: cut off.
		})
	}

	// Garbage: seeded random bodies (bytes, truncated JSON, wrong types)
	// to every endpoint.
	rng := rand.New(rand.NewPCG(7, 19))
	paths := []string{"/v1/envs/a/step", "/v1/envs/a/reset", "/v1/envs/a/spaces", "/v1/envs", "/v1/envs/zz/step", "/healthz", "/v1/../x"}
	bodies := []func() []byte{
		func() []byte { b := make([]byte, rng.IntN(2048)); fillRand(rng, b); return b },
		func() []byte { return []byte(`{"action": [1, 2`) },
		func() []byte { return []byte(`{"action": "x"}`) },
		func() []byte { return []byte(`{"seed": 1e999}`) },
		func() []byte { return []byte(strings.Repeat("[", 5000)) },
	}
	type job struct {
		path string
		body []byte
	}
	var jobs []job
	for range 300 {
		jobs = append(jobs, job{paths[rng.IntN(len(paths))], bodies[rng.IntN(len(bodies))]()})
	}
	for w := range 4 {
		wg.Go(func() {
			for j := w; j < len(jobs); j += 4 {
				req, _ := http.NewRequest(http.MethodPost, url+jobs[j].path, bytes.NewReader(jobs[j].body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := hc.Do(req)
				if err != nil {
					errs <- fmt.Errorf("garbage %d to %s: %w", j, jobs[j].path, err)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					errs <- fmt.Errorf("garbage %d to %s: status %d: %s", j, jobs[j].path, resp.StatusCode, b)
				}
				if resp.StatusCode >= 400 {
					var e ErrorResponse
					if json.Unmarshal(b, &e) != nil || e.Error == "" {
						errs <- fmt.Errorf("garbage %d to %s: status %d without a JSON error: %q", j, jobs[j].path, resp.StatusCode, b)
					}
				}
			}
		})
	}

	// Huge bodies: 8 MiB, 512 times the limit.
	for i := range 4 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/envs/a/step", bytes.NewReader(make([]byte, 8<<20)))
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := hc.Do(req)
			if err != nil {
				// The server may close the connection while the client
				// still writes the rest of the body.
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				errs <- fmt.Errorf("huge body %d: status %d, want 413", i, resp.StatusCode)
			}
		})
	}

	// The well-behaved client, on the same environment, all the while.
	c, err := Dial(ctx, url, "a", testToken)
	require.NoError(t, err)
	_, _, err = c.Reset(ctx, 1)
	require.NoError(t, err)
	for i := range 50 {
		_, _, _, _, _, err := c.Step(ctx, []float64{2, 0.5, 1 << 30})
		require.NoError(t, err, "good client step %d", i)
	}

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Nothing of the abusers stays: the goroutine count returns to what it
	// was with the server idle (the server's own and the good client's
	// idle connection aside).
	hc.CloseIdleConnections()
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+8 }, 20*time.Second, 100*time.Millisecond,
		"goroutines back near %d", base)
	cancel()
	require.NoError(t, <-done)
}

func fillRand(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
