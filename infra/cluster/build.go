package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aware-autoscaler/aware/infra/gobuild"
)

// Versions pins the components of the local control plane.
type Versions struct {
	// Kubernetes is the k8s.io/kubernetes release (kube-apiserver,
	// kube-controller-manager, kube-scheduler, kubectl).
	Kubernetes string
	// Etcd is the go.etcd.io/etcd/server/v3 release; 3.6 or later (kwok's
	// watches need RequestWatchProgress, which 3.4 lacks).
	Etcd string
	// Kwok is the sigs.k8s.io/kwok release that fakes nodes and pods.
	Kwok string
}

// DefaultVersions are the versions tested here; each resolves through the
// module proxy (several later patch releases are refused by it, see
// docs/versions.md).
func DefaultVersions() Versions {
	return Versions{Kubernetes: "v1.34.10", Etcd: "v3.6.16", Kwok: "v0.8.0"}
}

// Binaries are the paths of the control plane's executables.
type Binaries struct {
	APIServer, ControllerManager, Scheduler, Kubectl, Etcd, Kwok string
}

// Install returns the binaries for v under cacheDir, building the missing
// ones from the Go module proxy: one directory per component and version,
// completed by a rename, so an interrupted build leaves nothing that looks
// finished. Kubernetes takes about 12 minutes and 2 GB of memory cold, etcd
// about 1.5 minutes; a cached version is found in milliseconds. Progress and
// the go command's output go to log.
func Install(ctx context.Context, cacheDir string, v Versions, log io.Writer) (Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	kube := filepath.Join(cacheDir, "kubernetes-"+v.Kubernetes)
	etcd := filepath.Join(cacheDir, "etcd-"+v.Etcd)
	kwok := filepath.Join(cacheDir, "kwok-"+v.Kwok)
	err := gobuild.Install(ctx, []gobuild.Step{
		{Dir: kube, Build: func(ctx context.Context, tmp string) error { return buildKubernetes(ctx, tmp, v.Kubernetes, log) }},
		{Dir: etcd, Build: func(ctx context.Context, tmp string) error { return buildEtcd(ctx, tmp, v.Etcd, log) }},
		{Dir: kwok, Build: func(ctx context.Context, tmp string) error { return buildKwok(ctx, tmp, v.Kwok, log) }},
	}, log)
	if err != nil {
		return Binaries{}, fmt.Errorf("cluster: %w", err)
	}
	b := Binaries{
		APIServer:         filepath.Join(kube, "kube-apiserver"),
		ControllerManager: filepath.Join(kube, "kube-controller-manager"),
		Scheduler:         filepath.Join(kube, "kube-scheduler"),
		Kubectl:           filepath.Join(kube, "kubectl"),
		Etcd:              filepath.Join(etcd, "etcd"),
		Kwok:              filepath.Join(kwok, "kwok"),
	}
	for _, p := range []string{b.APIServer, b.ControllerManager, b.Scheduler, b.Kubectl, b.Etcd, b.Kwok} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("cluster: %s is missing from the cache; remove %s to rebuild it", p, filepath.Dir(p))
		}
	}
	return b, nil
}

// stagingRe matches the staging replace lines of k8s.io/kubernetes's go.mod.
var stagingRe = regexp.MustCompile(`^\s*(k8s\.io/[A-Za-z0-9._/-]+)\s+=>\s+\./staging/`)

// stagingModules lists the modules k8s.io/kubernetes replaces with its
// staging directories; a wrapper module must pin each to its published
// v0.minor.patch release instead.
func stagingModules(goMod []byte) []string {
	var mods []string
	sc := bufio.NewScanner(bytes.NewReader(goMod))
	for sc.Scan() {
		if m := stagingRe.FindStringSubmatch(sc.Text()); m != nil {
			mods = append(mods, m[1])
		}
	}
	return mods
}

// stagingVersion maps v1.34.10 to the staging modules' v0.34.10.
func stagingVersion(kube string) (string, error) {
	if !regexp.MustCompile(`^v1\.\d+\.\d+$`).MatchString(kube) {
		return "", fmt.Errorf("kubernetes version %q is not of the form v1.MINOR.PATCH", kube)
	}
	return "v0." + strings.TrimPrefix(kube, "v1."), nil
}

// kubeLdflags sets the version variables the Kubernetes build normally sets,
// without which the servers report v0.0.0.
func kubeLdflags(kube string) string {
	parts := strings.Split(strings.TrimPrefix(kube, "v"), ".")
	var b strings.Builder
	b.WriteString("-s -w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, " -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z",
			pkg, kube, pkg, parts[0], pkg, parts[1], pkg, pkg)
	}
	return b.String()
}

func buildKubernetes(ctx context.Context, dir, version string, log io.Writer) error {
	staging, err := stagingVersion(version)
	if err != nil {
		return err
	}
	info, err := gobuild.ModDownload(ctx, dir, "k8s.io/kubernetes@"+version, log)
	if err != nil {
		return err
	}
	goMod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	mods := stagingModules(goMod)
	if len(mods) == 0 {
		return fmt.Errorf("no staging modules in %s", info.GoMod)
	}
	var gm strings.Builder
	fmt.Fprintf(&gm, "module aware.local/kubebuild\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", version)
	for _, m := range mods {
		fmt.Fprintf(&gm, "\t%s => %s %s\n", m, m, staging)
	}
	gm.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gm.String()), 0o644); err != nil {
		return err
	}
	var pkgs []string
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		pkgs = append(pkgs, "k8s.io/kubernetes/cmd/"+c)
	}
	return gobuild.Build(ctx, dir, kubeLdflags(version), []string{"k8s.io/kubernetes@" + version}, pkgs, log)
}

func buildEtcd(ctx context.Context, dir, version string, log io.Writer) error {
	gm := fmt.Sprintf("module aware.local/etcdbuild\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n", version)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gm), 0o644); err != nil {
		return err
	}
	if err := gobuild.Build(ctx, dir, "-s -w", []string{"go.etcd.io/etcd/server/v3@" + version}, []string{"go.etcd.io/etcd/server/v3"}, log); err != nil {
		return err
	}
	// The server module's main package is named after its path ("server").
	return os.Rename(filepath.Join(dir, "bin", "server"), filepath.Join(dir, "bin", "etcd"))
}

func buildKwok(ctx context.Context, dir, version string, log io.Writer) error {
	gm := fmt.Sprintf("module aware.local/kwokbuild\n\ngo 1.24.0\n\nrequire sigs.k8s.io/kwok %s\n", version)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gm), 0o644); err != nil {
		return err
	}
	return gobuild.Build(ctx, dir, "-s -w", []string{"sigs.k8s.io/kwok@" + version}, []string{"sigs.k8s.io/kwok/cmd/kwok"}, log)
}

// DefaultCacheDir is where Install keeps binaries by default:
// $XDG_CACHE_HOME/aware/cluster, or ~/.cache/aware/cluster.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return filepath.Join(base, "aware", "cluster"), nil
}

// ErrNotBuilt says the default versions' binaries are not in the default
// cache (ci/setup.sh, `aware cluster install` or `make cluster-up` build
// them).
var ErrNotBuilt = errors.New("control-plane binaries not built (run `aware cluster install`; about 10 minutes once)")

// Cached returns the default versions' binaries from the default cache
// without building anything: ErrNotBuilt when a version is missing there.
// Tests use it to skip (or, under CI, fail) instead of starting a build.
func Cached(ctx context.Context) (Binaries, error) {
	dir, err := DefaultCacheDir()
	if err != nil {
		return Binaries{}, err
	}
	v := DefaultVersions()
	for _, d := range []string{"kubernetes-" + v.Kubernetes, "etcd-" + v.Etcd, "kwok-" + v.Kwok} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			return Binaries{}, fmt.Errorf("%w: %s", ErrNotBuilt, filepath.Join(dir, d))
		}
	}
	return Install(ctx, dir, v, nil)
}
