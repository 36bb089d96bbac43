package image

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hello = `package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println("hello from", os.Args[0], os.Getuid()) }
`

var (
	helloOnce sync.Once
	helloBin  string
	helloErr  error
)

// helloBinary builds a small static Linux program (the aware binary takes
// a minute to build; what is tested here does not depend on which binary).
func helloBinary(t *testing.T) string {
	t.Helper()
	helloOnce.Do(func() {
		dir, err := os.MkdirTemp("", "image-hello")
		if err != nil {
			helloErr = err
			return
		}
		for f, body := range map[string]string{"go.mod": "module hello\n\ngo 1.24\n", "main.go": hello} {
			if helloErr = os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); helloErr != nil {
				return
			}
		}
		helloBin = filepath.Join(dir, "hello")
		cmd := exec.Command("go", "build", "-trimpath", "-o", helloBin, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			helloErr = errors.New(string(b))
		}
	})
	require.NoError(t, helloErr)
	return helloBin
}

func TestBuildIsReproducibleAndComplete(t *testing.T) {
	bin := helloBinary(t)
	a, err := Build(bin, "example.com/aware", "")
	require.NoError(t, err)
	b, err := Build(bin, "example.com/aware", "")
	require.NoError(t, err)
	assert.Equal(t, a.Digest, b.Digest, "the same binary gives the same image")
	assert.Equal(t, "example.com/aware:"+a.Digest.Hex[:12], a.Ref)

	cf, err := a.Image.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, runtime.GOARCH, cf.Architecture)
	assert.Equal(t, []string{BinaryPath}, cf.Config.Entrypoint)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.True(t, cf.Created.Time.Equal(time.Unix(0, 0)))

	layers, err := a.Image.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		entries[h.Name] = h
	}
	require.Contains(t, entries, "aware")
	assert.Equal(t, int64(0o755), entries["aware"].Mode)
	st, err := os.Stat(bin)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), entries["aware"].Size)
	require.Contains(t, entries, "tmp/")
	assert.Equal(t, int64(0o1777), entries["tmp/"].Mode)
	assert.Contains(t, entries, "etc/passwd")

	// A different binary is a different image.
	other := filepath.Join(t.TempDir(), "other")
	body, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, append(body, 0), 0o755))
	c, err := Build(other, "example.com/aware", "")
	require.NoError(t, err)
	assert.NotEqual(t, a.Digest, c.Digest)
}

func TestCheckStaticRefuses(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755))
	dynamic, err := exec.LookPath("ls") // the C library's ls is dynamically linked
	require.NoError(t, err)
	tests := []struct {
		name, path, arch, want string
	}{
		{"not ELF", text, "amd64", "is not a Linux executable"},
		{"missing", filepath.Join(dir, "nope"), "amd64", "is not a Linux executable"},
		{"dynamic", dynamic, runtime.GOARCH, "dynamically linked"},
		{"unknown arch", helloBinary(t), "mips", `architecture "mips"`},
	}
	if runtime.GOARCH == "amd64" {
		tests = append(tests, struct{ name, path, arch, want string }{"other arch", helloBinary(t), "arm64", "not arm64"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckStatic(tc.path, tc.arch)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	require.NoError(t, CheckStatic(helloBinary(t), runtime.GOARCH))
	_, err = Build(text, "example.com/aware", "")
	assert.ErrorContains(t, err, "is not a Linux executable")
	_, err = Build(helloBinary(t), "Not A Repo!", "")
	assert.ErrorContains(t, err, `repository "Not A Repo!"`)
}

func TestTarballRoundTrip(t *testing.T) {
	b, err := Build(helloBinary(t), "example.com/aware", "")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "img", "aware.tar")
	require.NoError(t, WriteTarball(path, b))
	tag, err := name.NewTag(b.Ref)
	require.NoError(t, err)
	got, err := tarball.ImageFromPath(path, &tag)
	require.NoError(t, err)
	want, err := b.Image.ConfigName()
	require.NoError(t, err)
	have, err := got.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, want, have, "the tarball holds the image under its tag")
}

func TestPushRefersByDigest(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	b, err := Build(helloBinary(t), host+"/aware", "")
	require.NoError(t, err)
	pushed, err := Push(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, host+"/aware@"+b.Digest.String(), pushed.Ref)
	ref, err := name.ParseReference(pushed.Ref)
	require.NoError(t, err)
	img, err := remote.Image(ref)
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	assert.Equal(t, b.Digest, d)
}

// TestEngineRunsImage loads the image into the machine's container engine
// and runs it: the image is a real one, not only a well-formed tarball.
func TestEngineRunsImage(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no container engine: docker info:", err)
	}
	b, err := Build(helloBinary(t), "aware.test/hello", "")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "hello.tar")
	require.NoError(t, WriteTarball(path, b))
	out, err := exec.Command("docker", "load", "-i", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", b.Ref).Run() })
	out, err = exec.Command("docker", "run", "--rm", "--network=none", b.Ref).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "hello from /aware 65532\n", string(out))
}
