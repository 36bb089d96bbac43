package trajectory

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Option configures OpenFile and OpenInflux; each says which it applies
// to, and the other ignores it.
type Option func(*options)

type options struct {
	logger *slog.Logger

	// FileStore
	segmentSize  int64
	maxOpenFiles int
	maxBytes     int64
	maxAge       time.Duration

	// InfluxStore
	database       string
	retention      string
	retentionDur   time.Duration
	batchSize      int
	flushInterval  time.Duration
	retryMin       time.Duration
	retryMax       time.Duration
	client         *http.Client
	requestTimeout time.Duration
	username       string
	password       string
	maxBuffered    int
}

// Defaults of the options.
const (
	DefaultSegmentSize    = 64 << 20
	DefaultMaxOpenFiles   = 64
	DefaultDatabase       = "aware"
	DefaultBatchSize      = 1000
	DefaultFlushInterval  = time.Second
	DefaultRetryMin       = 500 * time.Millisecond
	DefaultRetryMax       = 30 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxBuffered    = 50 * DefaultBatchSize
)

func defaultOptions() options {
	return options{
		logger:         slog.New(slog.DiscardHandler),
		segmentSize:    DefaultSegmentSize,
		maxOpenFiles:   DefaultMaxOpenFiles,
		database:       DefaultDatabase,
		batchSize:      DefaultBatchSize,
		flushInterval:  DefaultFlushInterval,
		retryMin:       DefaultRetryMin,
		retryMax:       DefaultRetryMax,
		requestTimeout: DefaultRequestTimeout,
	}
}

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxBuffered == 0 {
		o.maxBuffered = 50 * o.batchSize
	}
	switch {
	case o.logger == nil:
		return o, fmt.Errorf("WithLogger: nil logger")
	case o.segmentSize < 4<<10 || o.segmentSize > 1<<40:
		return o, fmt.Errorf("WithSegmentSize(%d): must be between 4 KiB and 1 TiB", o.segmentSize)
	case o.maxBytes < 0 || (o.maxBytes > 0 && o.maxBytes < 2*o.segmentSize):
		return o, fmt.Errorf("WithMaxBytes(%d): must be 0 (no bound) or at least twice the segment size, %d", o.maxBytes, 2*o.segmentSize)
	case o.maxAge < 0:
		return o, fmt.Errorf("WithMaxAge(%s): negative", o.maxAge)
	case o.maxOpenFiles < 1:
		return o, fmt.Errorf("WithMaxOpenFiles(%d): must be positive", o.maxOpenFiles)
	case o.database == "":
		return o, fmt.Errorf("WithDatabase: empty name")
	case o.retentionDur < 0:
		return o, fmt.Errorf("WithRetentionPolicy(%q, %s): negative duration", o.retention, o.retentionDur)
	case o.retentionDur > 0 && o.retention == "":
		return o, fmt.Errorf("WithRetentionPolicy(%q, %s): a duration needs a policy name", o.retention, o.retentionDur)
	case o.batchSize < 1:
		return o, fmt.Errorf("WithBatchSize(%d): must be positive", o.batchSize)
	case o.flushInterval <= 0:
		return o, fmt.Errorf("WithFlushInterval(%s): must be positive", o.flushInterval)
	case o.retryMin <= 0 || o.retryMax < o.retryMin:
		return o, fmt.Errorf("WithRetryBackoff(%s, %s): need 0 < min <= max", o.retryMin, o.retryMax)
	case o.requestTimeout <= 0:
		return o, fmt.Errorf("WithRequestTimeout(%s): must be positive", o.requestTimeout)
	case o.maxBuffered < o.batchSize:
		return o, fmt.Errorf("WithMaxBuffered(%d): must be at least the batch size %d", o.maxBuffered, o.batchSize)
	}
	if o.client == nil {
		o.client = &http.Client{}
	}
	return o, nil
}

// WithLogger sets the logger for warnings (a torn log tail repaired at
// open, InfluxDB going away and coming back, rejected batches). Default:
// discard. Both stores.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSegmentSize sets the size at which FileStore starts a new log
// segment (default 64 MiB); it also bounds InfluxStore's spool and journal
// segments.
func WithSegmentSize(bytes int64) Option { return func(o *options) { o.segmentSize = bytes } }

// WithMaxOpenFiles bounds the segment files FileStore keeps open for
// reading (default 64); more are opened and closed as needed.
func WithMaxOpenFiles(n int) Option { return func(o *options) { o.maxOpenFiles = n } }

// WithDatabase sets InfluxStore's database (default "aware"), created at
// open (or, if InfluxDB is down then, before the first write).
func WithDatabase(name string) Option { return func(o *options) { o.database = name } }

// WithRetentionPolicy makes InfluxStore write to and read from the named
// retention policy instead of the database's default. With a positive
// duration the policy is created (or altered to that duration) with the
// database; with 0 it must exist.
func WithRetentionPolicy(name string, duration time.Duration) Option {
	return func(o *options) { o.retention, o.retentionDur = name, duration }
}

// WithBatchSize sets how many steps InfluxStore sends per write request
// (default 1000); a full batch is sent without waiting for the interval.
func WithBatchSize(n int) Option { return func(o *options) { o.batchSize = n } }

// WithFlushInterval sets how often InfluxStore sends what is buffered
// (default 1 s).
func WithFlushInterval(d time.Duration) Option { return func(o *options) { o.flushInterval = d } }

// WithRetryBackoff sets InfluxStore's wait between delivery attempts while
// InfluxDB is unreachable: min after the first failure, doubling up to max
// (defaults 500 ms and 30 s). Flush and reads try at once regardless.
func WithRetryBackoff(minWait, maxWait time.Duration) Option {
	return func(o *options) { o.retryMin, o.retryMax = minWait, maxWait }
}

// WithHTTPClient sets the client InfluxStore uses (default: a plain
// http.Client; every request is bounded by WithRequestTimeout anyway).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithRequestTimeout bounds each InfluxDB request (default 10 s).
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithCredentials makes InfluxStore authenticate (HTTP basic auth).
func WithCredentials(username, password string) Option {
	return func(o *options) { o.username, o.password = username, password }
}

// WithMaxBuffered bounds the steps InfluxStore holds in memory awaiting
// delivery (default 50 batches); Append waits for room beyond it (the
// background flusher spools to disk within one request timeout if InfluxDB
// is down).
func WithMaxBuffered(n int) Option { return func(o *options) { o.maxBuffered = n } }
