package toolchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aware-autoscaler/aware/infra/gobuild"
)

// Versions pins the toolchain.
type Versions struct {
	// CLI is the github.com/pulumi/pulumi/pkg/v3 release of the pulumi
	// command (and the sdk/v3 release beside it).
	CLI string
	// Kubernetes is the provider plugin's version as Pulumi knows it (the
	// version the pulumi-kubernetes SDK asks for).
	Kubernetes string
	// KubernetesModule is the github.com/pulumi/pulumi-kubernetes/provider/v4
	// module version the plugin is built from.
	KubernetesModule string
}

// DefaultVersions are the versions the module proxy serves here: later
// sdk/pkg releases (v3.275–v3.276) and SDK v4.34.0 are refused, and the
// provider module is served only as the pseudo-version of its 4.33 line.
func DefaultVersions() Versions {
	return Versions{CLI: "v3.274.1", Kubernetes: "4.33.0", KubernetesModule: "v4.0.0-20260115033456-f47bc2d6f199"}
}

// Tools are the built executables.
type Tools struct {
	// Pulumi is the pulumi command, PulumiRoot the directory it is in
	// the bin/ of (the Automation API's PulumiCommandOptions.Root).
	Pulumi, PulumiRoot string
	// KubernetesProvider is pulumi-resource-kubernetes.
	KubernetesProvider string
	// Versions they were built at.
	Versions Versions
}

// clipboard replaces github.com/atotto/clipboard, whose pinned pseudo-version
// the CLI needs is not served, with the fork Pulumi's own build uses.
const clipboard = "github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e"

var (
	cliVersionRe    = regexp.MustCompile(`^v3\.\d+\.\d+$`)
	pluginVersionRe = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
)

// Validate checks the versions' forms.
func (v Versions) Validate() error {
	var errs []error
	if !cliVersionRe.MatchString(v.CLI) {
		errs = append(errs, fmt.Errorf("toolchain: CLI version %q is not of the form v3.MINOR.PATCH", v.CLI))
	}
	if !pluginVersionRe.MatchString(v.Kubernetes) {
		errs = append(errs, fmt.Errorf("toolchain: Kubernetes provider version %q is not of the form MAJOR.MINOR.PATCH (no v)", v.Kubernetes))
	}
	if !strings.HasPrefix(v.KubernetesModule, "v4.") {
		errs = append(errs, fmt.Errorf("toolchain: provider module version %q is not a v4 module version", v.KubernetesModule))
	}
	return errors.Join(errs...)
}

// Install returns the tools for v under cacheDir, building the missing ones:
// the CLI takes about 3 minutes and 2.3 GB of memory cold, the provider
// about 5.5 minutes and 5 GB; a cached version is found at once.
func Install(ctx context.Context, cacheDir string, v Versions, log io.Writer) (Tools, error) {
	if err := v.Validate(); err != nil {
		return Tools{}, err
	}
	if log == nil {
		log = io.Discard
	}
	cli := filepath.Join(cacheDir, "pulumi-"+v.CLI)
	prov := filepath.Join(cacheDir, "pulumi-resource-kubernetes-"+v.Kubernetes)
	err := gobuild.Install(ctx, []gobuild.Step{
		{Dir: cli, Build: func(ctx context.Context, tmp string) error { return buildCLI(ctx, tmp, v.CLI, log) }},
		{Dir: prov, Build: func(ctx context.Context, tmp string) error {
			return buildProvider(ctx, tmp, v.KubernetesModule, v.Kubernetes, log)
		}},
	}, log)
	if err != nil {
		return Tools{}, fmt.Errorf("toolchain: %w", err)
	}
	t := Tools{Pulumi: filepath.Join(cli, "bin", "pulumi"), PulumiRoot: cli, KubernetesProvider: filepath.Join(prov, "pulumi-resource-kubernetes"), Versions: v}
	for _, p := range []string{t.Pulumi, t.KubernetesProvider} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return Tools{}, fmt.Errorf("toolchain: %s is missing from the cache; remove %s to rebuild it", p, filepath.Dir(p))
		}
	}
	return t, nil
}

func buildCLI(ctx context.Context, dir, version string, log io.Writer) error {
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module aware.local/pulumicli\n\ngo 1.26.6\n"), 0o644); err != nil {
		return err
	}
	if err := gobuild.Run(ctx, dir, log, "mod", "edit", "-replace", clipboard); err != nil {
		return err
	}
	ldflags := "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + version
	err := gobuild.Build(ctx, dir, ldflags,
		[]string{"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@" + version, "github.com/pulumi/pulumi/sdk/v3@" + version},
		[]string{"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"}, log)
	if err != nil {
		return err
	}
	// The Automation API looks for the CLI at <root>/bin/pulumi.
	if err := os.Mkdir(filepath.Join(dir, "bin", "bin"), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(dir, "bin", "pulumi"), filepath.Join(dir, "bin", "bin", "pulumi"))
}

// buildProvider builds pulumi-resource-kubernetes from a copy of the
// module's main package: the module ships without the generated files its
// main embeds (schema-embed.json, terraform-mapping-embed.json), which are
// made here from the module's schema.json (its version set to the plugin's)
// and terraform-mapping.json.
func buildProvider(ctx context.Context, dir, module, version string, log io.Writer) error {
	const mod = "github.com/pulumi/pulumi-kubernetes/provider/v4"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module aware.local/pulumi-resource-kubernetes\n\ngo 1.26.6\n"), 0o644); err != nil {
		return err
	}
	if err := gobuild.Run(ctx, dir, log, "get", mod+"@"+module); err != nil {
		return err
	}
	info, err := gobuild.ModDownload(ctx, dir, mod+"@"+module, log)
	if err != nil {
		return err
	}
	src := filepath.Join(info.Dir, "cmd", "pulumi-resource-kubernetes")
	main, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.Split(string(main), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//go:generate") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return err
	}
	if err := rewriteJSON(filepath.Join(src, "schema.json"), filepath.Join(dir, "schema-embed.json"), version); err != nil {
		return err
	}
	if err := rewriteJSON(filepath.Join(src, "terraform-mapping.json"), filepath.Join(dir, "terraform-mapping-embed.json"), ""); err != nil {
		return err
	}
	if err := gobuild.Run(ctx, dir, log, "mod", "tidy"); err != nil {
		return err
	}
	ldflags := "-s -w -X " + mod + "/pkg/version.Version=" + version
	return gobuild.Build(ctx, dir, ldflags, nil, []string{"."}, log)
}

// rewriteJSON compacts the JSON file src into dst, setting its top-level
// "version" when version is not empty.
func rewriteJSON(src, dst, version string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if version != "" {
		v, _ := json.Marshal(version)
		doc["version"] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}

// DefaultCacheDir is where Install keeps the tools by default:
// $XDG_CACHE_HOME/aware/pulumi, or ~/.cache/aware/pulumi.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("toolchain: %w", err)
	}
	return filepath.Join(base, "aware", "pulumi"), nil
}

// ErrNotBuilt says the default versions are not in the default cache.
var ErrNotBuilt = errors.New("the Pulumi CLI and Kubernetes provider are not built (`aware testbed up` and `preview` build them on first use, `aware testbed install` ahead of it; about 9 minutes once)")

// Cached returns the default versions' tools from the default cache without
// building anything: ErrNotBuilt when one is missing there.
func Cached(ctx context.Context) (Tools, error) {
	dir, err := DefaultCacheDir()
	if err != nil {
		return Tools{}, err
	}
	return cached(ctx, dir, DefaultVersions())
}

func cached(ctx context.Context, dir string, v Versions) (Tools, error) {
	for _, d := range []string{"pulumi-" + v.CLI, "pulumi-resource-kubernetes-" + v.Kubernetes} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			return Tools{}, fmt.Errorf("%w: %s", ErrNotBuilt, filepath.Join(dir, d))
		}
	}
	return Install(ctx, dir, v, nil)
}

// Ensure returns the default versions' tools from the default cache,
// building them first when they are missing (the testbed's first use),
// after one line on log saying what it builds and about how long it takes;
// the go command's output follows on log.
func Ensure(ctx context.Context, log io.Writer) (Tools, error) {
	dir, err := DefaultCacheDir()
	if err != nil {
		return Tools{}, err
	}
	return ensure(ctx, dir, DefaultVersions(), log, Install)
}

// installFunc is Install (a fake in tests).
type installFunc func(ctx context.Context, cacheDir string, v Versions, log io.Writer) (Tools, error)

func ensure(ctx context.Context, dir string, v Versions, log io.Writer, install installFunc) (Tools, error) {
	t, err := cached(ctx, dir, v)
	if !errors.Is(err, ErrNotBuilt) {
		return t, err
	}
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintln(log, BuildNotice(dir, v))
	return install(ctx, dir, v, log)
}

// BuildNotice is the line Ensure prints before building v into dir: what
// it builds, and the cold build times measured on 2 cores (docs/versions.md).
func BuildNotice(dir string, v Versions) string {
	return fmt.Sprintf("the testbed needs the Pulumi CLI %s and Kubernetes provider %s, not built yet: building them from the module proxy into %s, once (cold on 2 cores: the CLI about 3 minutes, the provider about 6, 12 beside other builds, with up to 5 GB of memory)",
		v.CLI, v.Kubernetes, dir)
}

// InstallPlugin makes the provider known to the Pulumi home directory
// home (PULUMI_HOME) with `pulumi plugin install --file`, unless that
// version is there already.
func (t Tools) InstallPlugin(ctx context.Context, home string, log io.Writer) error {
	if _, err := os.Stat(filepath.Join(home, "plugins", "resource-kubernetes-v"+t.Versions.Kubernetes, "pulumi-resource-kubernetes")); err == nil {
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("toolchain: Pulumi home: %w", err)
	}
	cmd := exec.CommandContext(ctx, t.Pulumi, "plugin", "install", "resource", "kubernetes", "v"+t.Versions.Kubernetes, "--file", t.KubernetesProvider)
	cmd.Env = append(os.Environ(), "PULUMI_HOME="+home, "PULUMI_SKIP_UPDATE_CHECK=true")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolchain: pulumi plugin install kubernetes v%s: %w", t.Versions.Kubernetes, err)
	}
	return nil
}
