package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/aware-autoscaler/aware/gym"
)

// maxReply bounds a reply the client reads.
const maxReply = 64 << 20

// Error is a failed call to a remote environment: the server's status code
// and message, or Status 0 when no reply arrived.
type Error struct {
	Op      string // "spaces", "reset", "step", "list"
	Env     string
	Status  int
	Message string
	Err     error // the transport error when Status is 0
}

func (e *Error) Error() string {
	where := "remote: " + e.Op
	if e.Env != "" {
		where += " " + e.Env
	}
	if e.Status == 0 {
		return fmt.Sprintf("%s: %v", where, e.Err)
	}
	return fmt.Sprintf("%s: %d %s: %s", where, e.Status, http.StatusText(e.Status), e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// StatusOf is the HTTP status of a remote call's error (0 if err is not a
// reply from the server).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient sets the HTTP client (default: a client of its own with no
// timeout; the context of each call bounds it).
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// Client is one remote environment as a gym.Env. Its methods may be called
// from several goroutines; the server runs them one at a time.
type Client struct {
	base     string // without the trailing slash
	env      string
	token    string
	hc       *http.Client
	obs, act gym.Space
	lastSeed atomic.Uint64
}

var _ gym.Env = (*Client)(nil)

// Dial connects to environment env of the server at baseURL (such as
// "http://127.0.0.1:7777") with token ("" for an insecure server) and
// fetches its spaces.
func Dial(ctx context.Context, baseURL, env, token string, opts ...ClientOption) (*Client, error) {
	if u, err := url.Parse(baseURL); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("remote: base URL %q: want http://host:port or https://host:port", baseURL)
	}
	if !envName.MatchString(env) {
		return nil, fmt.Errorf("remote: environment name %q: want letters, digits, '.', '_' or '-'", env)
	}
	if token != "" {
		if err := CheckToken(token); err != nil {
			return nil, err
		}
	}
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), env: env, token: token, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	var sp SpacesResponse
	var err error
	if err := c.call(ctx, "spaces", http.MethodGet, c.envPath("spaces"), nil, &sp); err != nil {
		return nil, err
	}
	if c.obs, err = sp.Observation.Space(); err != nil {
		return nil, &Error{Op: "spaces", Env: env, Err: fmt.Errorf("observation %w", err)}
	}
	if c.act, err = sp.Action.Space(); err != nil {
		return nil, &Error{Op: "spaces", Env: env, Err: fmt.Errorf("action %w", err)}
	}
	return c, nil
}

// List returns the names of the environments the server at baseURL serves.
func List(ctx context.Context, baseURL, token string, opts ...ClientOption) ([]string, error) {
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), token: token, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	var r EnvsResponse
	if err := c.call(ctx, "list", http.MethodGet, "/"+APIVersion+"/envs", nil, &r); err != nil {
		return nil, err
	}
	return r.Envs, nil
}

func (c *Client) envPath(op string) string {
	return "/" + APIVersion + "/envs/" + c.env + "/" + op
}

// Name is the environment's name on the server.
func (c *Client) Name() string { return c.env }

// ObservationSpace is the remote environment's observation space.
func (c *Client) ObservationSpace() gym.Space { return c.obs }

// ActionSpace is the remote environment's action space.
func (c *Client) ActionSpace() gym.Space { return c.act }

// LastSeed is the seed of the last successful Reset.
func (c *Client) LastSeed() uint64 { return c.lastSeed.Load() }

// Reset resets the remote environment with seed.
func (c *Client) Reset(ctx context.Context, seed uint64) ([]float64, gym.Info, error) {
	var r ResetResponse
	if err := c.call(ctx, "reset", http.MethodPost, c.envPath("reset"), ResetRequest{Seed: &seed}, &r); err != nil {
		return nil, gym.Info{}, err
	}
	c.lastSeed.Store(r.Seed)
	return float64s(r.Obs), r.Info.Info(), nil
}

// Step steps the remote environment. Non-finite action values are sent as
// such and refused by the server.
func (c *Client) Step(ctx context.Context, action []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	var r StepResponse
	if err := c.call(ctx, "step", http.MethodPost, c.envPath("step"), StepRequest{Action: floats(action)}, &r); err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	return float64s(r.Obs), float64(r.Reward), r.Terminated, r.Truncated, r.Info.Info(), nil
}

// call sends req (nil for no body) and decodes the reply into reply.
func (c *Client) call(ctx context.Context, op, method, path string, req, reply any) error {
	fail := func(err error) error { return &Error{Op: op, Env: c.env, Err: err} }
	var body io.Reader
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return fail(fmt.Errorf("encode request: %w", err))
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fail(err)
	}
	hr.Header.Set("Accept", "application/json")
	if req != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return fail(fmt.Errorf("read reply (status %d): %w", resp.StatusCode, err))
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("non-JSON reply %q", truncate(b, 200))
		}
		return &Error{Op: op, Env: c.env, Status: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(b, reply); err != nil {
		return fail(fmt.Errorf("decode reply: %w", err))
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
