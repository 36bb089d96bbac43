package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aware-autoscaler/aware/gym"
)

// DefaultMaxBodyBytes bounds a request body unless WithMaxBodyBytes says
// otherwise.
const DefaultMaxBodyBytes = 1 << 20

// envName is what an environment may be called: it is a path segment.
var envName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Option configures a Server.
type Option func(*config)

type config struct {
	insecure bool
	log      *slog.Logger
	maxBody  int64
	timeout  time.Duration
	reg      prometheus.Registerer
}

// WithInsecure lets NewServer accept an empty token: every request is then
// served without authentication. Only for loopback use.
func WithInsecure() Option { return func(c *config) { c.insecure = true } }

// WithLogger sets the logger: requests at debug, failed requests at warn
// (default: discard). The token and the Authorization header are never
// logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithMaxBodyBytes bounds request bodies; larger ones get 413
// (default DefaultMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithTimeout bounds each reset or step, including the wait for the
// environment's previous call; 0 (the default) leaves only the client's
// own deadline. A call that runs out of time gets 504 and the environment
// must be reset.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMetrics registers request counters and latency histograms
// (aware_env_requests_total, aware_env_request_duration_seconds) with reg.
func WithMetrics(reg prometheus.Registerer) Option { return func(c *config) { c.reg = reg } }

// Server serves environments over HTTP; it is an http.Handler.
type Server struct {
	cfg     config
	slots   map[string]*slot
	names   []string // sorted
	token   [sha256.Size]byte
	noAuth  bool // insecure, without a token
	metrics *serverMetrics
}

var _ http.Handler = (*Server)(nil)

// slot is one served environment and its session state, guarded by lock.
type slot struct {
	name     string
	env      gym.Env
	obs, act gym.Space
	spaces   []byte // the encoded SpacesResponse
	lock     chan struct{}

	// Guarded by lock.
	started  bool
	broken   string // why the environment needs a reset, if it does
	nextSeed uint64
}

// acquire takes the slot's lock or gives up with ctx.
func (s *slot) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slot) release() { <-s.lock }

// NewServer serves envs under their map keys, which must be path-safe
// names (letters, digits, '.', '_', '-'). A request must carry
// "Authorization: Bearer <token>"; an empty token is refused unless
// WithInsecure is given. Each environment's spaces are read once, here.
func NewServer(envs map[string]gym.Env, token string, opts ...Option) (*Server, error) {
	cfg := config{maxBody: DefaultMaxBodyBytes}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	if cfg.maxBody <= 0 {
		return nil, fmt.Errorf("remote: max body bytes %d must be positive", cfg.maxBody)
	}
	if cfg.timeout < 0 {
		return nil, fmt.Errorf("remote: timeout %s must not be negative", cfg.timeout)
	}
	if token == "" && !cfg.insecure {
		return nil, errors.New("remote: refusing to serve without a token (give one, or WithInsecure for unauthenticated loopback use)")
	}
	if err := CheckToken(token); token != "" && err != nil {
		return nil, err
	}
	if len(envs) == 0 {
		return nil, errors.New("remote: no environments to serve")
	}
	s := &Server{cfg: cfg, slots: make(map[string]*slot, len(envs)), token: sha256.Sum256([]byte(token)), noAuth: token == ""}
	for name, env := range envs {
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("remote: environment name %q: want 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
		}
		if env == nil {
			return nil, fmt.Errorf("remote: environment %q is nil", name)
		}
		sl := &slot{name: name, env: env, obs: env.ObservationSpace(), act: env.ActionSpace(), lock: make(chan struct{}, 1), nextSeed: 1}
		if err := sl.obs.Validate(); err != nil {
			return nil, fmt.Errorf("remote: environment %q: observation %w", name, err)
		}
		if err := sl.act.Validate(); err != nil {
			return nil, fmt.Errorf("remote: environment %q: action %w", name, err)
		}
		b, err := json.Marshal(SpacesResponse{Observation: spaceJSON(sl.obs), Action: spaceJSON(sl.act)})
		if err != nil {
			return nil, fmt.Errorf("remote: environment %q: encode spaces: %w", name, err)
		}
		sl.spaces = b
		s.slots[name] = sl
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	if cfg.reg != nil {
		m, err := newServerMetrics(cfg.reg)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	return s, nil
}

// Names lists the served environments, sorted.
func (s *Server) Names() []string { return slices.Clone(s.names) }

// httpError is an error reply.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *httpError {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// recorder remembers the status written.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	op, env, herr := s.route(rec, r)
	if herr != nil {
		s.writeError(rec, r, herr)
	}
	d := time.Since(start)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if s.metrics != nil {
		label := env
		if _, known := s.slots[env]; !known {
			label = ""
		}
		s.metrics.requests.WithLabelValues(label, op, strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(op).Observe(d.Seconds())
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path, "op", op, "status", status, "took", d, "remote", r.RemoteAddr}
	if herr != nil {
		s.cfg.log.Warn("env request failed", append(attrs, "error", herr.msg)...)
		return
	}
	s.cfg.log.Debug("env request", attrs...)
}

// route serves the request unless it fails; it returns the operation and
// environment name for logs and metrics.
func (s *Server) route(w http.ResponseWriter, r *http.Request) (op, env string, herr *httpError) {
	path := r.URL.Path
	if path == "/healthz" {
		if herr := allow(r, http.MethodGet, http.MethodHead); herr != nil {
			return "healthz", "", herr
		}
		writeJSON(w, http.StatusOK, HealthResponse{Status: "ok"})
		return "healthz", "", nil
	}
	if herr := s.authorize(r); herr != nil {
		return "auth", "", herr
	}
	prefix := "/" + APIVersion + "/envs"
	if path == prefix {
		if herr := allow(r, http.MethodGet); herr != nil {
			return "list", "", herr
		}
		writeJSON(w, http.StatusOK, EnvsResponse{Envs: s.names})
		return "list", "", nil
	}
	rest, ok := strings.CutPrefix(path, prefix+"/")
	name, op, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || strings.Contains(op, "/") {
		return "other", "", errorf(http.StatusNotFound, "no endpoint %s; the endpoints are GET /healthz, GET %s, GET %s/{name}/spaces, POST %s/{name}/reset and POST %s/{name}/step",
			path, prefix, prefix, prefix, prefix)
	}
	switch op {
	case "spaces", "reset", "step":
	default:
		return "other", name, errorf(http.StatusNotFound, "no endpoint %q for environment %q; want spaces, reset or step", op, name)
	}
	sl, known := s.slots[name]
	if !known {
		return op, name, errorf(http.StatusNotFound, "unknown environment %q; this server has %s", name, list(s.names))
	}
	switch op {
	case "spaces":
		if herr := allow(r, http.MethodGet); herr != nil {
			return op, name, herr
		}
		writeBytes(w, http.StatusOK, sl.spaces)
		return op, name, nil
	case "reset":
		if herr := allow(r, http.MethodPost); herr != nil {
			return op, name, herr
		}
		return op, name, s.reset(w, r, sl)
	default:
		if herr := allow(r, http.MethodPost); herr != nil {
			return op, name, herr
		}
		return op, name, s.step(w, r, sl)
	}
}

// list quotes at most ten names.
func list(names []string) string {
	const most = 10
	q := make([]string, 0, most)
	for _, n := range names[:min(len(names), most)] {
		q = append(q, strconv.Quote(n))
	}
	out := strings.Join(q, ", ")
	if len(names) > most {
		out += fmt.Sprintf(" and %d more (GET /%s/envs lists them)", len(names)-most, APIVersion)
	}
	return out
}

func allow(r *http.Request, methods ...string) *httpError {
	if slices.Contains(methods, r.Method) {
		return nil
	}
	return &httpError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(methods, " or "))}
}

// authorize checks the bearer token in constant time.
func (s *Server) authorize(r *http.Request) *httpError {
	if s.noAuth {
		return nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return errorf(http.StatusUnauthorized, "missing Authorization header; want \"Authorization: Bearer <token>\"")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return errorf(http.StatusUnauthorized, "the Authorization header is not a bearer token; want \"Authorization: Bearer <token>\"")
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(got[:], s.token[:]) != 1 {
		return errorf(http.StatusUnauthorized, "invalid token")
	}
	return nil
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *httpError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="aware-env"`)
	}
	if e.status == http.StatusMethodNotAllowed {
		switch {
		case r.URL.Path == "/healthz":
			w.Header().Set("Allow", "GET, HEAD")
		case strings.HasSuffix(r.URL.Path, "/reset"), strings.HasSuffix(r.URL.Path, "/step"):
			w.Header().Set("Allow", http.MethodPost)
		default:
			w.Header().Set("Allow", http.MethodGet)
		}
	}
	writeJSON(w, e.status, ErrorResponse{Error: e.msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // every reply type encodes; this is a programming error
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorResponse{Error: "encode reply: " + err.Error()})
	}
	writeBytes(w, status, b)
}

func writeBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // a client gone away is not an error here
}

// readBody reads the whole body within the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, errorf(http.StatusBadRequest, "read request body: %v", err)
	}
	return body, nil
}

// decode parses body as one JSON object into v, refusing unknown fields
// and trailing data. want describes each field's expected type.
func decode(body []byte, v any, example string, want map[string]string) *httpError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(body, err, example, want)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "malformed JSON: trailing data after the object at byte %d; want a single object like %s", dec.InputOffset(), example)
	}
	return nil
}

// jsonError turns a decoding error into a message naming the byte offset
// or the field.
func jsonError(body []byte, err error, example string, want map[string]string) *httpError {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		hint := ""
		if at := syn.Offset - 1; at >= 0 && at < int64(len(body)) && (body[at] == 'N' || body[at] == 'I' || (body[at] == '-' && at+1 < int64(len(body)) && body[at+1] == 'I')) {
			hint = fmt.Sprintf(`; NaN and Infinity are not JSON (send finite numbers, or the strings "%s", "%s", "%s")`, jsonNaN, jsonPosInf, jsonNegInf)
		}
		return errorf(http.StatusBadRequest, "malformed JSON at byte %d: %s%s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "), hint)
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, "request body is empty; want a JSON object like %s", example)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed JSON: the body ends early, at byte %d; want a JSON object like %s", len(body), example)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errorf(http.StatusBadRequest, "request body is a JSON %s; want an object like %s", typ.Value, example)
		}
		w := want[typ.Field]
		if w == "" {
			w = typ.Type.String()
		}
		return errorf(http.StatusBadRequest, "field %q at byte %d: got %s, want %s", typ.Field, typ.Offset, typ.Value, w)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(http.StatusBadRequest, "%s; want an object like %s", strings.TrimPrefix(err.Error(), "json: "), example)
	}
	return errorf(http.StatusBadRequest, "malformed JSON: %v", err)
}

const (
	resetExample = `{"seed": 1}`
	stepExample  = `{"action": [v0, v1, ...]}`
)

func (s *Server) reset(w http.ResponseWriter, r *http.Request, sl *slot) *httpError {
	body, herr := s.readBody(w, r)
	if herr != nil {
		return herr
	}
	var req ResetRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if herr := decode(body, &req, resetExample, map[string]string{"seed": "an integer from 0 to 18446744073709551615"}); herr != nil {
			return herr
		}
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	if err := sl.acquire(ctx); err != nil {
		return s.callError(sl, "reset", err, true)
	}
	defer sl.release()
	seed := sl.nextSeed
	if req.Seed != nil {
		seed = *req.Seed
	}
	obs, info, err := sl.env.Reset(ctx, seed)
	if err != nil {
		sl.started, sl.broken = false, fmt.Sprintf("its last reset failed (%v)", err)
		return s.callError(sl, "reset", err, false)
	}
	if herr := checkObs(sl, "reset", obs); herr != nil {
		sl.started, sl.broken = false, "its last reset returned a malformed observation"
		return herr
	}
	sl.started, sl.broken, sl.nextSeed = true, "", seed+1
	writeJSON(w, http.StatusOK, ResetResponse{Obs: floats(obs), Info: infoJSON(info), Seed: seed})
	return nil
}

func (s *Server) step(w http.ResponseWriter, r *http.Request, sl *slot) *httpError {
	body, herr := s.readBody(w, r)
	if herr != nil {
		return herr
	}
	var req struct {
		Action []json.RawMessage `json:"action"`
	}
	if herr := decode(body, &req, stepExample, map[string]string{"action": fmt.Sprintf("an array of %d numbers", sl.act.Dim())}); herr != nil {
		return herr
	}
	action, herr := parseAction(req.Action, sl.act)
	if herr != nil {
		return herr
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	if err := sl.acquire(ctx); err != nil {
		return s.callError(sl, "step", err, true)
	}
	defer sl.release()
	switch {
	case sl.broken != "":
		return errorf(http.StatusConflict, "environment %q must be reset: %s", sl.name, sl.broken)
	case !sl.started:
		return errorf(http.StatusConflict, "environment %q has not been reset; POST /%s/envs/%s/reset first", sl.name, APIVersion, sl.name)
	}
	obs, reward, term, trunc, info, err := sl.env.Step(ctx, action)
	if err != nil {
		sl.broken = fmt.Sprintf("its last step failed (%v)", err)
		return s.callError(sl, "step", err, false)
	}
	if herr := checkObs(sl, "step", obs); herr != nil {
		sl.broken = "its last step returned a malformed observation"
		return herr
	}
	writeJSON(w, http.StatusOK, StepResponse{Obs: floats(obs), Reward: Float(reward), Terminated: term, Truncated: trunc, Info: infoJSON(info)})
	return nil
}

// parseAction checks an action's length and values, naming the index and
// dimension of a bad value.
func parseAction(raw []json.RawMessage, space gym.Space) ([]float64, *httpError) {
	if raw == nil {
		return nil, errorf(http.StatusBadRequest, "field \"action\" is missing or null; want an object like %s with %d values (%s)", stepExample, space.Dim(), strings.Join(space.Names, ", "))
	}
	if len(raw) != space.Dim() {
		return nil, errorf(http.StatusBadRequest, "action has %d values, the action space has %d (%s)", len(raw), space.Dim(), strings.Join(space.Names, ", "))
	}
	action := make([]float64, len(raw))
	for i, v := range raw {
		x, err := parseFloat(v)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			err = fmt.Errorf("is %v; want a finite number", x)
		}
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "action[%d] (%s) %v", i, space.Names[i], err)
		}
		action[i] = x
	}
	return action, nil
}

// checkObs refuses an observation whose length is not the space's.
func checkObs(sl *slot, op string, obs []float64) *httpError {
	if len(obs) != sl.obs.Dim() {
		return errorf(http.StatusInternalServerError, "%s of environment %q returned %d observation values, its observation space has %d", op, sl.name, len(obs), sl.obs.Dim())
	}
	return nil
}

// callContext is the request's context with the call timeout, if any.
func (s *Server) callContext(r *http.Request) (context.Context, context.CancelFunc) {
	if s.cfg.timeout > 0 {
		return context.WithTimeout(r.Context(), s.cfg.timeout)
	}
	return context.WithCancel(r.Context())
}

// callError maps a failed (or never started, when waiting) reset or step
// to a reply; an interrupted call leaves the environment needing a reset.
func (s *Server) callError(sl *slot, op string, err error, waiting bool) *httpError {
	what := op + " of environment " + strconv.Quote(sl.name)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		if !waiting && op == "step" {
			sl.broken = "its last step ran out of time"
		}
		if waiting {
			return errorf(http.StatusGatewayTimeout, "%s timed out waiting for the environment's previous call to finish", what)
		}
		return errorf(http.StatusGatewayTimeout, "%s did not finish in time: %v", what, err)
	case errors.Is(err, context.Canceled):
		if !waiting && op == "step" {
			sl.broken = "its last step was cancelled"
		}
		// The client has gone; the reply is for the log.
		return errorf(http.StatusServiceUnavailable, "%s was cancelled: %v", what, err)
	}
	return errorf(http.StatusInternalServerError, "%s failed: %v", what, err)
}

// Serve serves s on ln until ctx is cancelled; see the function Serve.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration, opts ...ServeOption) error {
	return Serve(ctx, ln, s, grace, s.cfg.log, opts...)
}

// What one client can hold of a server unless ServeOptions say otherwise:
// a request must arrive whole (headers and body) within DefaultReadTimeout,
// and at most DefaultMaxConns connections are open at once (more wait to be
// accepted). A connection costs a few tens of KiB, so slow or idle clients
// can hold at most a few tens of MiB, and are cut off within the timeout.
const (
	DefaultReadTimeout = 30 * time.Second
	DefaultMaxConns    = 1024
)

// serveConfig holds Serve's limits.
type serveConfig struct {
	readTimeout time.Duration
	maxConns    int
}

// ServeOption sets a limit of Serve.
type ServeOption func(*serveConfig)

// WithReadTimeout bounds the time to read a whole request, body included
// (default DefaultReadTimeout; the header alone must come within 10 s).
func WithReadTimeout(d time.Duration) ServeOption { return func(c *serveConfig) { c.readTimeout = d } }

// WithMaxConns bounds the connections open at once (default
// DefaultMaxConns).
func WithMaxConns(n int) ServeOption { return func(c *serveConfig) { c.maxConns = n } }

// Serve serves h (a Server, or a mux around one) on ln until ctx is
// cancelled, then stops accepting and gives in-flight calls up to grace to
// finish before cancelling their contexts. It returns nil after a clean
// stop. Slow clients are bounded (see DefaultReadTimeout).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, log *slog.Logger, opts ...ServeOption) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := serveConfig{readTimeout: DefaultReadTimeout, maxConns: DefaultMaxConns}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.readTimeout <= 0 || cfg.maxConns <= 0 {
		return fmt.Errorf("remote: read timeout %s and connection limit %d must be positive", cfg.readTimeout, cfg.maxConns)
	}
	ln = netutil.LimitListener(ln, cfg.maxConns)
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, cfg.readTimeout),
		// A step may take minutes (a real cluster's step interval): no
		// write timeout; replies are small.
		ReadTimeout: cfg.readTimeout,
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return runCtx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("remote: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var errs []error
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("env server: in-flight calls outlived the grace period; cancelling them", "grace", grace)
		cancelRuns()
		if err := srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("remote: close: %w", err))
		}
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("remote: serve %s: %w", ln.Addr(), err))
	}
	return errors.Join(errs...)
}

type serverMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aware_env_requests_total",
			Help: "Requests to the remote environment server by environment (empty if unknown), operation and status code.",
		}, []string{"env", "op", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aware_env_request_duration_seconds",
			Help:    "Time to serve a request to the remote environment server, by operation.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10),
		}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("remote: register metrics: %w", err)
		}
	}
	return m, nil
}
