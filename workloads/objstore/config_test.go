package objstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/objstore"
)

func validConfig() objstore.Config {
	return objstore.Config{Endpoint: "127.0.0.1:9000", AccessKey: "ak", SecretKey: "sk", Bucket: "aware"}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*objstore.Config)
		wantErr []string // substrings; nil means valid
	}{
		{name: "valid", edit: func(*objstore.Config) {}},
		{name: "http url", edit: func(c *objstore.Config) { c.Endpoint = "http://s3.local:9000" }},
		{name: "https url", edit: func(c *objstore.Config) { c.Endpoint = "https://s3.example.com/" }},
		{name: "region", edit: func(c *objstore.Config) { c.Region = "eu-west-1" }},
		{name: "missing endpoint", edit: func(c *objstore.Config) { c.Endpoint = "" },
			wantErr: []string{"endpoint: required", "AWARE_S3_ENDPOINT"}},
		{name: "bad scheme", edit: func(c *objstore.Config) { c.Endpoint = "ftp://x:1" },
			wantErr: []string{`endpoint: scheme "ftp"`}},
		{name: "path in url", edit: func(c *objstore.Config) { c.Endpoint = "http://x:1/bucket" },
			wantErr: []string{"endpoint:", "without user, path or query"}},
		{name: "path without scheme", edit: func(c *objstore.Config) { c.Endpoint = "x:1/bucket" },
			wantErr: []string{`endpoint: "x:1/bucket" is not host[:port]`}},
		{name: "http with secure", edit: func(c *objstore.Config) { c.Endpoint = "http://x:1"; c.Secure = true },
			wantErr: []string{"conflicts with Secure=true"}},
		{name: "missing keys", edit: func(c *objstore.Config) { c.AccessKey, c.SecretKey = "", "" },
			wantErr: []string{"accessKey: required", "secretKey: required"}},
		{name: "bad bucket", edit: func(c *objstore.Config) { c.Bucket = "Aware_Bucket" },
			wantErr: []string{`bucket: "Aware_Bucket" is not a valid S3 bucket name`}},
		{name: "short bucket", edit: func(c *objstore.Config) { c.Bucket = "ab" },
			wantErr: []string{"bucket:"}},
		{name: "missing bucket", edit: func(c *objstore.Config) { c.Bucket = "" },
			wantErr: []string{"bucket: required"}},
		{name: "bad region", edit: func(c *objstore.Config) { c.Region = "EU West" },
			wantErr: []string{`region: "EU West"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("AWARE_S3_ENDPOINT", " http://10.0.0.1:7070 ")
	t.Setenv("AWARE_S3_ACCESS_KEY", "ak")
	t.Setenv("AWARE_S3_SECRET_KEY", "sk")
	t.Setenv("AWARE_S3_BUCKET", "")
	t.Setenv("AWARE_S3_REGION", "us-west-2")
	c := objstore.ConfigFromEnv()
	assert.Equal(t, objstore.Config{Endpoint: "http://10.0.0.1:7070", AccessKey: "ak", SecretKey: "sk",
		Bucket: "aware", Region: "us-west-2"}, c)
	require.NoError(t, c.Validate())

	t.Setenv("AWARE_S3_BUCKET", "other")
	assert.Equal(t, "other", objstore.ConfigFromEnv().Bucket)
}

func TestConnectRejectsBadConfigAndOptions(t *testing.T) {
	_, err := objstore.Connect(t.Context(), objstore.Config{Bucket: "aware"})
	require.ErrorContains(t, err, "endpoint: required")

	_, err = objstore.Connect(t.Context(), validConfig(), objstore.WithPartSize(1<<20))
	require.ErrorContains(t, err, "part size 1048576: must be at least")

	_, err = objstore.Connect(t.Context(), validConfig(), objstore.WithMaxRetries(-1))
	require.ErrorContains(t, err, "max retries -1")
}

func ExampleConfig_Validate() {
	err := objstore.Config{Endpoint: "http://127.0.0.1:7070", AccessKey: "ak", Bucket: "My_Bucket"}.Validate()
	fmt.Println(err)
	// Output:
	// object store config: secretKey: required (AWARE_S3_SECRET_KEY)
	// bucket: "My_Bucket" is not a valid S3 bucket name (3-63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)
}
