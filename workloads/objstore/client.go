package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultPartSize is the multipart part size, and so the buffer each upload
// of unknown size holds, unless WithPartSize says otherwise.
const DefaultPartSize = 8 << 20

// minPartSize is S3's smallest allowed part (except the last).
const minPartSize = 5 << 20

// singlePutLimit is the largest stream of unknown size sent as one PUT: Put
// reads up to this much ahead and, if the stream ends there, knows the
// length. Longer streams go multipart, buffered one part at a time.
const singlePutLimit = 1 << 20

// Client is a connection to one bucket of an S3-compatible store. It is safe
// for concurrent use and implements segments.ObjectStore.
type Client struct {
	mc       *minio.Client
	bucket   string
	endpoint string
	partSize uint64
	bufs     sync.Pool // *[]byte, grown up to partSize
}

// Option configures Connect.
type Option func(*options) error

type options struct {
	partSize   uint64
	maxRetries int
}

// WithPartSize sets the multipart part size in bytes (at least 5 MiB). An
// upload of unknown size buffers one part at a time, so this bounds the
// memory each concurrent streaming Put holds.
func WithPartSize(n uint64) Option {
	return func(o *options) error {
		if n < minPartSize {
			return fmt.Errorf("part size %d: must be at least %d bytes (5 MiB)", n, minPartSize)
		}
		o.partSize = n
		return nil
	}
}

// WithMaxRetries sets how often a failed request is tried again (default 3;
// 0 disables retries).
func WithMaxRetries(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("max retries %d: must not be negative", n)
		}
		o.maxRetries = n
		return nil
	}
}

// Connect validates cfg, connects to the store, checks the credentials and
// creates cfg.Bucket if it does not exist.
func Connect(ctx context.Context, cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{partSize: DefaultPartSize, maxRetries: 3}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("object store: %w", err)
		}
	}
	host, secure, _ := cfg.hostAndTLS()
	mc, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupAuto,
		MaxRetries:   o.maxRetries + 1, // minio counts the first try
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Endpoint, err)
	}
	c := &Client{mc: mc, bucket: cfg.Bucket, endpoint: cfg.Endpoint, partSize: o.partSize}
	if err := c.ensureBucket(ctx, cfg.Region); err != nil {
		return nil, err
	}
	return c, nil
}

// Bucket returns the bucket the client reads and writes.
func (c *Client) Bucket() string { return c.bucket }

func (c *Client) ensureBucket(ctx context.Context, region string) error {
	ok, err := c.mc.BucketExists(ctx, c.bucket)
	if err != nil {
		return c.describe("check bucket", err)
	}
	if ok {
		return nil
	}
	err = c.mc.MakeBucket(ctx, c.bucket, minio.MakeBucketOptions{Region: region})
	if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		return c.describe("create bucket", err)
	}
	return nil
}

// describe wraps err with the endpoint, bucket and, for rejected
// credentials, a hint.
func (c *Client) describe(op string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode == http.StatusForbidden,
		resp.Code == minio.InvalidAccessKeyID, resp.Code == minio.SignatureDoesNotMatch,
		resp.Code == minio.AccessDenied,
		resp.Code == "XAdminUserNotFound": // versitygw: unknown access key
		return fmt.Errorf("object store %s bucket %q: %s: credentials rejected (check %s and %s): %w",
			c.endpoint, c.bucket, op, EnvAccessKey, EnvSecretKey, err)
	}
	return fmt.Errorf("object store %s bucket %q: %s: %w", c.endpoint, c.bucket, op, err)
}

// Put stores the object key with the content of r. size is the exact length,
// or -1 when unknown: r is then streamed with a bounded buffer (a single PUT
// when it ends within 1 MiB, else a multipart upload holding one part at a
// time).
func (c *Client) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if size < -1 {
		return fmt.Errorf("put %q: size %d: want -1 (unknown) or a length", key, size)
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: c.partSize}
	if size >= 0 {
		if _, err := c.mc.PutObject(ctx, c.bucket, key, r, size, opts); err != nil {
			return c.describe(fmt.Sprintf("put %q", key), err)
		}
		return nil
	}
	bp := c.buffer()
	defer c.bufs.Put(bp)
	head, err := readUpTo(r, bp, singlePutLimit)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("put %q: read content: %w", key, err)
	}
	if errors.Is(err, io.EOF) { // the whole object was read
		_, err = c.mc.PutObject(ctx, c.bucket, key, bytes.NewReader(head), int64(len(head)), opts)
	} else {
		_, err = c.mc.PutObject(ctx, c.bucket, key, io.MultiReader(bytes.NewReader(head), r), -1, opts)
	}
	if err != nil {
		return c.describe(fmt.Sprintf("put %q", key), err)
	}
	return nil
}

// buffer returns a pooled byte slice; its capacity grows to the objects
// seen, up to singlePutLimit.
func (c *Client) buffer() *[]byte {
	if bp, ok := c.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

// readUpTo reads r into *bp until EOF (returning io.EOF with the content) or
// until limit bytes were read (returning nil: more may follow). The slice
// grows as needed and is stored back in *bp.
func readUpTo(r io.Reader, bp *[]byte, limit int) ([]byte, error) {
	b := (*bp)[:0]
	for {
		if len(b) == limit {
			*bp = b
			return b, nil
		}
		if len(b) == cap(b) { // grow by doubling, up to limit
			nb := make([]byte, len(b), min(max(2*cap(b), 64<<10), limit))
			copy(nb, b)
			b = nb
		}
		end := min(cap(b), limit)
		n, err := r.Read(b[len(b):end])
		b = b[:len(b)+n]
		if err != nil {
			*bp = b
			return b, err
		}
	}
}

// Get returns a reader of the whole object. A missing key gives an error
// matching fs.ErrNotExist.
func (c *Client) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := c.mc.GetObject(ctx, c.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, c.describe(fmt.Sprintf("get %q", key), err)
	}
	// Stat sends the GET (it does not add a request) and surfaces errors
	// such as a missing key before the caller starts reading.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, fmt.Errorf("object store %s bucket %q: get %q: %w (%w)", c.endpoint, c.bucket, key, fs.ErrNotExist, err)
		}
		return nil, c.describe(fmt.Sprintf("get %q", key), err)
	}
	return obj, nil
}

// Delete removes the object key; deleting a missing key is not an error.
func (c *Client) Delete(ctx context.Context, key string) error {
	if err := c.mc.RemoveObject(ctx, c.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return c.describe(fmt.Sprintf("delete %q", key), err)
	}
	return nil
}

// List returns the keys of the objects under prefix (every level below it),
// in lexical order. Use a prefix ending in "/" for a folder's objects.
func (c *Client) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for obj := range c.mc.ListObjects(ctx, c.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, c.describe(fmt.Sprintf("list %q", prefix), obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	sort.Strings(keys)
	return keys, nil
}
