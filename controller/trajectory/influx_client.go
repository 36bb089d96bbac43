package trajectory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The InfluxDB schema. Series cardinality is two per application: the
// episode number is a field, never a tag.
//
//	steps,app=<app> episode=<int>i,t=<int>i,reward=<float>,done=<bool>,
//	    stage="<string>",ep_reward=<float>,ep_start=<int>i,sdim=<int>i,
//	    adim=<int>i,s0=<float>,…,a0=<float>,… <step time, ns>
//	episodes,app=<app> episode=<int>i,reward=<float>,steps=<int>i,
//	    start=<int>i <time of the Done step, ns>
//
// ep_reward and ep_start carry the episode's running reward and start so
// that the last step of an application tells a reopened store where its
// episode stands; an episodes point is written with each Done step. Step
// times are unique per application (Append enforces increasing times), so
// no two points of a series share a timestamp and a redelivered batch
// overwrites its own points with identical values.
const (
	measSteps    = "steps"
	measEpisodes = "episodes"
	tagApp       = "app"
)

// minNanos and maxNanos bound the timestamps InfluxDB accepts.
const (
	minNanos = math.MinInt64 + 2
	maxNanos = math.MaxInt64 - 1
)

// influxClient speaks InfluxDB's 1.x HTTP API: /write with line protocol,
// /query with InfluxQL.
type influxClient struct {
	base       string // scheme://host[:port][/prefix], no trailing slash
	db, rp     string
	hc         *http.Client
	timeout    time.Duration
	user, pass string
}

// statusError is a non-2xx answer.
type statusError struct {
	op     string
	status int
	msg    string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, http.StatusText(e.status), e.msg)
}

// statementError is an InfluxQL statement that failed.
type statementError struct{ msg string }

func (e *statementError) Error() string { return e.msg }

// isDatabaseNotFound reports whether err says the database does not exist.
func isDatabaseNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database not found")
}

// retryable reports whether a failed write may succeed later unchanged:
// network errors, timeouts, 5xx, and the 4xx that are about the server's
// state or configuration rather than the data (401, 403, 404 database not
// found, 408, 429). A failed InfluxQL statement is not retryable.
func retryable(err error) bool {
	var qe *statementError
	if errors.As(err, &qe) {
		return false
	}
	var se *statusError
	if errors.As(err, &se) {
		switch se.status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusRequestTimeout, http.StatusTooManyRequests:
			return true
		}
		return se.status >= 500
	}
	return true
}

// do sends a request and returns the response for the caller to close,
// with its cancel.
func (c *influxClient) do(ctx context.Context, op, method, path string, params url.Values, body []byte, ctype string) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	u := c.base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("InfluxDB %s: %s: %w", c.base, op, err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.user != "" || c.pass != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("InfluxDB %s: %s: %w: %w", c.base, op, ErrUnavailable, err)
	}
	if resp.StatusCode/100 != 2 {
		defer cancel()
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		se := &statusError{op: op, status: resp.StatusCode, msg: errorMessage(msg, resp.Header)}
		if resp.StatusCode >= 500 {
			return nil, nil, fmt.Errorf("InfluxDB %s: %s: %w: %w", c.base, op, ErrUnavailable, se)
		}
		return nil, nil, fmt.Errorf("InfluxDB %s: %s: %w", c.base, op, se)
	}
	return resp, cancel, nil
}

// errorMessage extracts InfluxDB's message from an error response.
func errorMessage(body []byte, h http.Header) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	if m := h.Get("X-Influxdb-Error"); m != "" {
		return m
	}
	return strings.TrimSpace(string(body))
}

// write posts line protocol.
func (c *influxClient) write(ctx context.Context, body []byte) error {
	params := url.Values{"db": {c.db}, "precision": {"ns"}}
	if c.rp != "" {
		params.Set("rp", c.rp)
	}
	resp, cancel, err := c.do(ctx, "write", http.MethodPost, "/write", params, body, "text/plain; charset=utf-8")
	if err != nil {
		return err
	}
	defer cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// queryResult is one statement's result.
type queryResult struct {
	StatementID int           `json:"statement_id"`
	Series      []querySeries `json:"series"`
	Error       string        `json:"error"`
}

type querySeries struct {
	Name    string            `json:"name"`
	Tags    map[string]string `json:"tags"`
	Columns []string          `json:"columns"`
	Values  [][]any           `json:"values"`
	Partial bool              `json:"partial"`
}

// query runs InfluxQL statements (separated by ";") against the database
// and returns one result per statement, in order; a failed statement is a
// *statementError. Results are read in chunks, so a server's row limit does
// not truncate them.
func (c *influxClient) query(ctx context.Context, q string, withDB bool) ([]queryResult, error) {
	res, err := c.queryOnce(ctx, q, withDB)
	if errors.Is(err, io.ErrUnexpectedEOF) && ctx.Err() == nil {
		// A response cut short (a proxy or the server dropped the
		// connection): queries are idempotent, try once more.
		res, err = c.queryOnce(ctx, q, withDB)
	}
	return res, err
}

func (c *influxClient) queryOnce(ctx context.Context, q string, withDB bool) ([]queryResult, error) {
	params := url.Values{"epoch": {"ns"}, "chunked": {"true"}, "chunk_size": {"10000"}}
	if withDB {
		params.Set("db", c.db)
	}
	form := url.Values{"q": {q}}
	resp, cancel, err := c.do(ctx, "query", http.MethodPost, "/query", params, []byte(form.Encode()), "application/x-www-form-urlencoded")
	if err != nil {
		return nil, fmt.Errorf("%w (query %s)", err, shorten(q))
	}
	defer cancel()
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	var out []queryResult
	for {
		var chunk struct {
			Results []struct {
				queryResult
				Partial bool `json:"partial"`
			} `json:"results"`
			Error string `json:"error"`
		}
		if err := dec.Decode(&chunk); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("InfluxDB %s: query %s: decode response: %w: %w", c.base, shorten(q), ErrUnavailable, err)
		}
		if chunk.Error != "" {
			return nil, fmt.Errorf("InfluxDB %s: query %s: %w", c.base, shorten(q), &statementError{chunk.Error})
		}
		for _, r := range chunk.Results {
			var cur *queryResult
			if n := len(out); n > 0 && out[n-1].StatementID == r.StatementID {
				cur = &out[n-1]
			} else {
				out = append(out, queryResult{StatementID: r.StatementID})
				cur = &out[len(out)-1]
			}
			if r.Error != "" {
				cur.Error = r.Error
			}
			for _, s := range r.Series {
				if n := len(cur.Series); n > 0 && cur.Series[n-1].Partial && sameSeries(&cur.Series[n-1], &s) {
					cur.Series[n-1].Values = append(cur.Series[n-1].Values, s.Values...)
					cur.Series[n-1].Partial = s.Partial
					continue
				}
				cur.Series = append(cur.Series, s)
			}
		}
	}
	return out, nil
}

func sameSeries(a, b *querySeries) bool {
	if a.Name != b.Name || len(a.Tags) != len(b.Tags) {
		return false
	}
	for k, v := range a.Tags {
		if b.Tags[k] != v {
			return false
		}
	}
	return true
}

// exec runs one statement that returns nothing of interest.
func (c *influxClient) exec(ctx context.Context, q string) error {
	res, err := c.query(ctx, q, false)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Error != "" {
			return fmt.Errorf("InfluxDB %s: %s: %w", c.base, q, &statementError{r.Error})
		}
	}
	return nil
}

// one runs a single statement and returns its result, turning a statement
// error into a Go error (a missing database is an empty result).
func (c *influxClient) one(ctx context.Context, q string) (queryResult, error) {
	res, err := c.query(ctx, q, true)
	if err != nil {
		return queryResult{}, err
	}
	if len(res) != 1 {
		return queryResult{}, fmt.Errorf("InfluxDB %s: query %s: %d results, want 1", c.base, shorten(q), len(res))
	}
	if res[0].Error != "" {
		if isDatabaseNotFound(&statementError{res[0].Error}) {
			return queryResult{}, nil
		}
		return queryResult{}, fmt.Errorf("InfluxDB %s: query %s: %w", c.base, shorten(q), &statementError{res[0].Error})
	}
	return res[0], nil
}

func shorten(q string) string {
	if len(q) > 200 {
		return strconv.Quote(q[:200] + "…")
	}
	return strconv.Quote(q)
}

// from returns the FROM clause of measurement m.
func (c *influxClient) from(m string) string {
	if c.rp != "" {
		return quoteIdent(c.rp) + "." + quoteIdent(m)
	}
	return quoteIdent(m)
}

// quoteIdent quotes an InfluxQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// quoteString quotes an InfluxQL string literal.
func quoteString(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + `'`
}

// appendLines appends the line protocol of s: its steps point and, for a
// Done step, its episodes point.
func appendLines(b []byte, s *spooled) []byte {
	ns := s.Time.UnixNano()
	b = append(b, measSteps...)
	b = appendTag(b, tagApp, s.App)
	b = append(b, " episode="...)
	b = strconv.AppendInt(b, s.Episode, 10)
	b = append(b, "i,t="...)
	b = strconv.AppendInt(b, int64(s.T), 10)
	b = append(b, "i,reward="...)
	b = appendFloat(b, s.Reward)
	b = append(b, ",done="...)
	b = strconv.AppendBool(b, s.Done)
	b = append(b, ",stage="...)
	b = appendStringField(b, s.Stage)
	b = append(b, ",ep_reward="...)
	b = appendFloat(b, s.epReward)
	b = append(b, ",ep_start="...)
	b = strconv.AppendInt(b, s.epStart, 10)
	b = append(b, "i,sdim="...)
	b = strconv.AppendInt(b, int64(len(s.State)), 10)
	b = append(b, "i,adim="...)
	b = strconv.AppendInt(b, int64(len(s.Action)), 10)
	b = append(b, 'i')
	for i, v := range s.State {
		b = append(b, ",s"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '=')
		b = appendFloat(b, v)
	}
	for i, v := range s.Action {
		b = append(b, ",a"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '=')
		b = appendFloat(b, v)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, ns, 10)
	b = append(b, '\n')
	if !s.Done {
		return b
	}
	b = append(b, measEpisodes...)
	b = appendTag(b, tagApp, s.App)
	b = append(b, " episode="...)
	b = strconv.AppendInt(b, s.Episode, 10)
	b = append(b, "i,reward="...)
	b = appendFloat(b, s.epReward)
	b = append(b, ",steps="...)
	b = strconv.AppendInt(b, int64(s.T)+1, 10)
	b = append(b, "i,start="...)
	b = strconv.AppendInt(b, s.epStart, 10)
	b = append(b, "i "...)
	b = strconv.AppendInt(b, ns, 10)
	return append(b, '\n')
}

// appendTag appends ",key=value" with the value escaped for line protocol
// (commas, equals signs and spaces; names never hold backslashes or
// newlines, see checkName).
func appendTag(b []byte, key, v string) []byte {
	b = append(b, ',')
	b = append(b, key...)
	b = append(b, '=')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ',', '=', ' ':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendStringField appends a quoted string field value.
func appendStringField(b []byte, v string) []byte {
	b = append(b, '"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendFloat appends a float field value that parses back to v exactly.
func appendFloat(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', -1, 64) }

// row reads the columns of one result row by name.
type row struct {
	cols map[string]int
	vals []any
	err  error
	// missing says the first error was a value that is absent (null): a
	// point whose fields are not all visible yet (InfluxDB stores each
	// field apart, and a query concurrent with a write can see some).
	missing bool
}

func newColumns(cols []string) map[string]int {
	m := make(map[string]int, len(cols))
	for i, c := range cols {
		m[c] = i
	}
	return m
}

func (r *row) raw(col string) any {
	i, ok := r.cols[col]
	if !ok || i >= len(r.vals) {
		return nil
	}
	return r.vals[i]
}

func (r *row) fail(col string, v any, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("column %q: %v (%T) is not %s", col, v, v, want)
		r.missing = v == nil
	}
}

func (r *row) int(col string) int64 {
	v := r.raw(col)
	n, ok := v.(json.Number)
	if !ok {
		r.fail(col, v, "an integer")
		return 0
	}
	i, err := n.Int64()
	if err != nil {
		r.fail(col, v, "an integer")
	}
	return i
}

func (r *row) float(col string) float64 {
	v := r.raw(col)
	n, ok := v.(json.Number)
	if !ok {
		r.fail(col, v, "a number")
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		r.fail(col, v, "a number")
	}
	return f
}

func (r *row) bool(col string) bool {
	v := r.raw(col)
	b, ok := v.(bool)
	if !ok {
		r.fail(col, v, "a boolean")
	}
	return b
}

func (r *row) string(col string) string {
	v := r.raw(col)
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.fail(col, v, "a string")
	}
	return s
}

// parseStep reads a steps row written by appendLines.
func parseStep(app string, r *row) spooled {
	var s spooled
	s.App = app
	s.Time = fromNanos(r.int("time"))
	s.Episode = r.int("episode")
	s.T = int(r.int("t"))
	s.Reward = r.float("reward")
	s.Done = r.bool("done")
	s.Stage = r.string("stage")
	s.epReward = r.float("ep_reward")
	s.epStart = r.int("ep_start")
	sdim, adim := r.int("sdim"), r.int("adim")
	if r.err != nil {
		return s
	}
	if sdim < 0 || sdim > 1<<20 || adim < 0 || adim > 1<<20 {
		r.err = fmt.Errorf("dimensions %d, %d out of range", sdim, adim)
		return s
	}
	s.State = make([]float64, sdim)
	for i := range s.State {
		s.State[i] = r.float("s" + strconv.Itoa(i))
	}
	s.Action = make([]float64, adim)
	for i := range s.Action {
		s.Action[i] = r.float("a" + strconv.Itoa(i))
	}
	return s
}
