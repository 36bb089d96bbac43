package mirror

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Scheme starts every URL of an S3-compatible store's folder.
const Scheme = "s3://"

// bucketName is S3's rule for bucket names (as objstore.Config checks it).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// URL is a folder of an S3-compatible store: s3://Bucket/Prefix.
type URL struct {
	Bucket string
	// Prefix is the folder, without a leading or trailing slash ("" is
	// the bucket's root).
	Prefix string
}

// IsURL reports whether s names a store's folder rather than a local one.
func IsURL(s string) bool { return strings.HasPrefix(s, Scheme) }

// ParseURL reads s3://BUCKET[/PREFIX]. The prefix's segments must be
// plain names: no empty segment, ".", ".." or backslash, so that a key
// maps to one path below a local folder and back.
func ParseURL(s string) (URL, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URL{}, fmt.Errorf("%q: want %sBUCKET/PREFIX", s, Scheme)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !bucketName.MatchString(bucket) {
		return URL{}, fmt.Errorf("%q: bucket %q: want 3-63 lower-case letters, digits, dots and hyphens", s, bucket)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return URL{}, fmt.Errorf("%q: prefix: %w", s, err)
		}
	}
	return URL{Bucket: bucket, Prefix: prefix}, nil
}

func (u URL) String() string {
	if u.Prefix == "" {
		return Scheme + u.Bucket
	}
	return Scheme + u.Bucket + "/" + u.Prefix
}

// Join is u's folder name below u.
func (u URL) Join(name string) URL {
	return URL{Bucket: u.Bucket, Prefix: strings.TrimPrefix(path.Join(u.Prefix, name), "/")}
}

// checkKey refuses a key (or part of one) that would not map to one path
// below a folder.
func checkKey(k string) error {
	for _, seg := range strings.Split(k, "/") {
		switch {
		case seg == "", seg == ".", seg == "..":
			return fmt.Errorf("%q: segment %q: want a name between single slashes (not \".\" or \"..\")", k, seg)
		case strings.ContainsAny(seg, "\\\x00"):
			return fmt.Errorf("%q: segment %q: no backslash or NUL", k, seg)
		}
	}
	return nil
}
