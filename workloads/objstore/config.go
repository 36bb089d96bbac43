package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// DefaultBucket is the bucket used when none is configured.
const DefaultBucket = "aware"

// Environment variables read by ConfigFromEnv.
const (
	EnvEndpoint  = "AWARE_S3_ENDPOINT"
	EnvAccessKey = "AWARE_S3_ACCESS_KEY"
	EnvSecretKey = "AWARE_S3_SECRET_KEY"
	EnvBucket    = "AWARE_S3_BUCKET"
	EnvRegion    = "AWARE_S3_REGION"
)

// Config locates an S3-compatible store and the bucket the segments use.
type Config struct {
	// Endpoint is host:port, or a URL http://host:port or https://host:port
	// (the scheme then decides Secure).
	Endpoint  string
	AccessKey string
	SecretKey string
	// Bucket is created by Connect if it does not exist.
	Bucket string
	// Region is optional; empty lets the client discover it.
	Region string
	// Secure selects HTTPS for a host:port Endpoint.
	Secure bool
}

// ConfigFromEnv reads AWARE_S3_ENDPOINT, AWARE_S3_ACCESS_KEY,
// AWARE_S3_SECRET_KEY, AWARE_S3_BUCKET (default "aware") and AWARE_S3_REGION.
// Use Validate to check the result.
func ConfigFromEnv() Config {
	c := Config{
		Endpoint:  strings.TrimSpace(os.Getenv(EnvEndpoint)),
		AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey),
		Bucket:    strings.TrimSpace(os.Getenv(EnvBucket)),
		Region:    strings.TrimSpace(os.Getenv(EnvRegion)),
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	return c
}

var (
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// Validate reports every problem in c, each naming its field.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := c.hostAndTLS(); err != nil {
		errs = append(errs, err)
	}
	if c.AccessKey == "" {
		errs = append(errs, fmt.Errorf("accessKey: required (%s)", EnvAccessKey))
	}
	if c.SecretKey == "" {
		errs = append(errs, fmt.Errorf("secretKey: required (%s)", EnvSecretKey))
	}
	switch {
	case c.Bucket == "":
		errs = append(errs, fmt.Errorf("bucket: required (%s)", EnvBucket))
	case !bucketName.MatchString(c.Bucket) || strings.Contains(c.Bucket, ".."):
		errs = append(errs, fmt.Errorf("bucket: %q is not a valid S3 bucket name (3-63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)", c.Bucket))
	}
	if c.Region != "" && !regionName.MatchString(c.Region) {
		errs = append(errs, fmt.Errorf("region: %q is not a region name like us-east-1", c.Region))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("object store config: %w", errors.Join(errs...))
}

// hostAndTLS splits Endpoint into the host:port minio-go wants and whether
// to use TLS.
func (c Config) hostAndTLS() (host string, secure bool, err error) {
	ep := c.Endpoint
	if ep == "" {
		return "", false, fmt.Errorf("endpoint: required (%s)", EnvEndpoint)
	}
	secure = c.Secure
	raw := ep
	if strings.Contains(ep, "://") {
		u, perr := url.Parse(ep)
		if perr != nil {
			return "", false, fmt.Errorf("endpoint: %q: %w", ep, perr)
		}
		switch u.Scheme {
		case "http":
			if c.Secure {
				return "", false, fmt.Errorf("endpoint: scheme http in %q conflicts with Secure=true", ep)
			}
			secure = false
		case "https":
			secure = true
		default:
			return "", false, fmt.Errorf("endpoint: scheme %q in %q: want http or https", u.Scheme, ep)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return "", false, fmt.Errorf("endpoint: %q must be scheme://host[:port] without user, path or query", ep)
		}
		raw = u.Host
	}
	u, perr := url.Parse("http://" + raw)
	if perr != nil || u.Host != raw || u.Hostname() == "" {
		return "", false, fmt.Errorf("endpoint: %q is not host[:port]", ep)
	}
	return raw, secure, nil
}
