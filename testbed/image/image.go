package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Path of the binary in the image, and the user it runs as (distroless's
// "nonroot").
const (
	BinaryPath = "/aware"
	UID        = 65532
)

// CABundle is where Debian keeps the CA certificates the image carries
// (the image has them only when the build machine has them).
var CABundle = "/etc/ssl/certs/ca-certificates.crt"

// epoch is every timestamp of the image, for its digest to depend on its
// contents only.
var epoch = time.Unix(0, 0).UTC()

// Built is an image that was built.
type Built struct {
	Image v1.Image
	// Digest is the image's manifest digest ("sha256:…").
	Digest v1.Hash
	// Ref is how manifests refer to it: repository@digest once pushed,
	// repository:<first 12 hex digits of the digest> when loaded from a
	// tarball (an engine keeps no registry digest for a loaded image, so
	// the tag carries it instead).
	Ref string
}

// Static builds ./cmd/aware of the module at src as a static binary for
// linux/arch (CGO off), into dir, and returns its path. Empty arch is the
// machine's.
func Static(ctx context.Context, src, dir, arch string) (string, error) {
	if arch == "" {
		arch = runtime.GOARCH
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("image: %w", err)
	}
	out := filepath.Join(dir, "aware-linux-"+arch)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/aware")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("image: go build ./cmd/aware in %s: %w\n%s", src, err, b)
	}
	return out, nil
}

// ModuleRoot is the root of the Go module holding dir (the source Static
// builds from).
func ModuleRoot(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("image: go env GOMOD in %s: %w", dir, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("image: %s is not inside the project's Go module (run from the checkout, or give the source)", dir)
	}
	return filepath.Dir(gomod), nil
}

// FromSource builds ./cmd/aware of the module at src ("" is the module of
// the working directory) static for linux/arch into dir (Static) and
// assembles its image named repository (Build).
func FromSource(ctx context.Context, src, dir, repository, arch string) (Built, error) {
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Built{}, fmt.Errorf("image: %w", err)
		}
		if src, err = ModuleRoot(ctx, wd); err != nil {
			return Built{}, err
		}
	}
	bin, err := Static(ctx, src, dir, arch)
	if err != nil {
		return Built{}, err
	}
	return Build(bin, repository, arch)
}

// CheckStatic returns an error unless path is a statically linked Linux
// executable for arch: a binary linked against the C library would not
// start on the image's empty base.
func CheckStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("image: %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if want == 0 {
		return fmt.Errorf("image: architecture %q: only amd64 and arm64 are built", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("image: %s is built for %s, not %s", path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: %s is dynamically linked (build it with CGO_ENABLED=0): it would not start on an empty base", path)
		}
	}
	return nil
}

// Build assembles the image of the static binary at path for linux/arch,
// named repository (e.g. "ghcr.io/aware-autoscaler/aware").
func Build(path, repository, arch string) (Built, error) {
	if arch == "" {
		arch = runtime.GOARCH
	}
	if err := CheckStatic(path, arch); err != nil {
		return Built{}, err
	}
	repo, err := name.NewRepository(repository)
	if err != nil {
		return Built{}, fmt.Errorf("image: repository %q: %w", repository, err)
	}
	layer, err := binaryLayer(path)
	if err != nil {
		return Built{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return Built{}, fmt.Errorf("image: %w", err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return Built{}, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.WorkingDir = "/tmp"
	cf.Config.Env = []string{"PATH=/", "HOME=/tmp", "SSL_CERT_FILE=" + CABundle}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/aware-autoscaler/aware"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return Built{}, fmt.Errorf("image: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return Built{}, fmt.Errorf("image: %w", err)
	}
	return Built{Image: img, Digest: d, Ref: repo.Tag(Tag(d)).String()}, nil
}

// Tag is the tag a loaded image carries: the first 12 hex digits of its
// digest.
func Tag(d v1.Hash) string { return d.Hex[:12] }

// binaryLayer is the image's single layer: /, /tmp (1777), /etc/passwd and
// /etc/group with the nonroot user, the CA bundle when the host has one,
// and the binary, all owned by root with the epoch as their time.
func binaryLayer(path string) (v1.Layer, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/tmp:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	steps := []func() error{
		func() error { return dir("etc/", 0o755) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
	}
	if ca, err := os.ReadFile(CABundle); err == nil {
		steps = append(steps,
			func() error { return dir("etc/ssl/", 0o755) },
			func() error { return dir("etc/ssl/certs/", 0o755) },
			func() error { return file(strings.TrimPrefix(CABundle, "/"), 0o644, ca) })
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("image: %w", err)
	}
	steps = append(steps,
		func() error { return dir("tmp/", 0o1777) },
		func() error { return file(strings.TrimPrefix(BinaryPath, "/"), 0o755, bin) })
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("image: layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	return l, nil
}

// WriteTarball writes b as a docker-save tarball at path under its Ref (a
// tag), for `docker load` or kind's image loading.
func WriteTarball(path string, b Built) error {
	tag, err := name.NewTag(b.Ref)
	if err != nil {
		return fmt.Errorf("image: %s is not a tag: %w", b.Ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := atomicfile.WriteWith(path, 0o644, func(w io.Writer) error { return tarball.Write(tag, b.Image, w) }); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// WriteTarballIn writes b as dir/<Tag>.tar (WriteTarball) and returns the
// path.
func WriteTarballIn(dir string, b Built) (string, error) {
	path := filepath.Join(dir, Tag(b.Digest)+".tar")
	return path, WriteTarball(path, b)
}

// Push pushes b to its repository with the credentials of the default
// keychain (docker config, credential helpers) and returns b with Ref
// repository@digest.
func Push(ctx context.Context, b Built) (Built, error) {
	tag, err := name.NewTag(b.Ref)
	if err != nil {
		return b, fmt.Errorf("image: %s is not a tag: %w", b.Ref, err)
	}
	if err := remote.Write(tag, b.Image, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return b, fmt.Errorf("image: pushing %s: %w", b.Ref, err)
	}
	b.Ref = tag.Context().Digest(b.Digest.String()).String()
	return b, nil
}
