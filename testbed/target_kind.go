package testbed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/testbed/image"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// TargetKind is a kind cluster on the machine's container engine, created
// (and deleted by down) by the driver, with the project's image built and
// loaded into its nodes.
const TargetKind Target = "kind"

// kindTarget: up builds the project's image, creates the stack's kind
// cluster (or finds it), loads the image into its nodes and checks that it
// resizes pods in place; down deletes the cluster, and its objects with it.
type kindTarget struct{}

func (kindTarget) name() Target { return TargetKind }
func (kindTarget) help() string { return "a kind cluster on the machine's container engine" }

func (kindTarget) validate(cfg Config) []error {
	return []error{needKubeconfig(cfg), cfg.Kind.validate()}
}

func (kindTarget) forTarget(cfg Config) Config { return cfg }
func (kindTarget) kubeconfigFromUp() bool      { return true }
func (kindTarget) preview(Config) error        { return nil }
func (kindTarget) plugins() []plugin           { return nil }

func (kindTarget) cluster(*pulumi.Context, Config, manifests.Options, *Testbed, *kubernetes.ProviderArgs) ([]pulumi.ResourceOption, error) {
	return nil, nil
}

func (kindTarget) start(ctx context.Context, d *Driver, cfg Config) (Config, error) {
	cfg, err := d.startKind(ctx, cfg)
	if err != nil {
		return cfg, err
	}
	return d.checkInPlace(ctx, cfg)
}

func (kindTarget) started(context.Context, *Driver, Config) (*local.Endpoints, error) {
	return nil, nil
}

func (kindTarget) down(_ context.Context, d *Driver, _ auto.Stack) error { return d.stopKind() }

func (kindTarget) status(_ *Driver, _ *Status, kubeconfig string) (string, error) {
	return kubeconfig, nil
}

// KindConfig sizes the kind target's cluster.
type KindConfig struct {
	// NodeImage is the kind node image; the default is the one kind's
	// release pins (by digest), whose Kubernetes resizes pods in place.
	NodeImage string `json:"nodeImage"`
	// Workers is the number of worker nodes besides the control plane.
	Workers int `json:"workers"`
}

// DefaultKindConfig is one control plane and two workers on kind's
// default node image.
func DefaultKindConfig() KindConfig {
	return KindConfig{NodeImage: defaults.Image, Workers: 2}
}

func (k KindConfig) validate() error {
	var errs []error
	if k.NodeImage == "" {
		errs = append(errs, errors.New("kind.nodeImage: empty"))
	}
	if k.Workers < 0 || k.Workers > 16 {
		errs = append(errs, fmt.Errorf("kind.workers %d: must be between 0 and 16", k.Workers))
	}
	return errors.Join(errs...)
}

// clusterConfig is kind's cluster configuration for k.
func (k KindConfig) clusterConfig() []byte {
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n")
	for range k.Workers {
		b.WriteString("- role: worker\n")
	}
	return []byte(b.String())
}

// KindClusters is what the kind target needs of kind (a fake in tests).
type KindClusters interface {
	// List names the clusters that exist.
	List() ([]string, error)
	// Create creates cluster name from config on nodeImage and writes its
	// kubeconfig to kubeconfig.
	Create(name string, config []byte, nodeImage, kubeconfig string) error
	// ExportKubeconfig writes an existing cluster's kubeconfig.
	ExportKubeconfig(name, kubeconfig string) error
	// LoadImage loads a docker-save tarball into every node.
	LoadImage(name, archive string) error
	// Delete deletes the cluster.
	Delete(name, kubeconfig string) error
}

// ErrNoContainerEngine is returned for the kind target on a machine
// without docker, podman or nerdctl.
var ErrNoContainerEngine = errors.New("no container engine (docker, podman or nerdctl) on $PATH: the kind target runs its nodes as containers; use --target local, which needs none")

// NewKindClusters is kind's library on the machine's container engine.
func NewKindClusters(log io.Writer) (KindClusters, error) {
	opt, err := cluster.DetectNodeProvider()
	if err != nil {
		return nil, ErrNoContainerEngine
	}
	return kindClusters{cluster.NewProvider(opt, cluster.ProviderWithLogger(kindLogger{log}))}, nil
}

type kindClusters struct{ p *cluster.Provider }

func (k kindClusters) List() ([]string, error) { return k.p.List() }

func (k kindClusters) Create(name string, config []byte, nodeImage, kubeconfig string) error {
	err := k.p.Create(name, cluster.CreateWithRawConfig(config), cluster.CreateWithNodeImage(nodeImage),
		cluster.CreateWithKubeconfigPath(kubeconfig), cluster.CreateWithWaitForReady(5*time.Minute),
		cluster.CreateWithDisplayUsage(false), cluster.CreateWithDisplaySalutation(false))
	return explainKind(err)
}

func (k kindClusters) ExportKubeconfig(name, kubeconfig string) error {
	return k.p.ExportKubeConfig(name, kubeconfig, false)
}

func (k kindClusters) LoadImage(name, archive string) error {
	nodes, err := k.p.ListInternalNodes(name)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("loading %s into node %s: %w", archive, n.String(), explainKind(err))
		}
	}
	return nil
}

func (k kindClusters) Delete(name, kubeconfig string) error { return k.p.Delete(name, kubeconfig) }

// explainKind adds the engine's own output to a kind error (kind's message
// names only the command) and says what a refused privileged container
// means.
func explainKind(err error) error {
	if err == nil {
		return nil
	}
	re := kindexec.RunErrorForError(err)
	if re == nil {
		return err
	}
	var lines []string
	for l := range strings.Lines(string(re.Output)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Run '") {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, "; ")
	msg := fmt.Sprintf("%v: %s", err, out)
	if strings.Contains(out, "unable to apply caps") || strings.Contains(out, "privileged") {
		msg += " (the container engine refuses privileged containers, which kind's nodes are: kind cannot run on this engine; use --target local, or a machine whose engine allows --privileged)"
	}
	return errors.New(msg)
}

// kindLogger sends kind's progress to a writer.
type kindLogger struct{ w io.Writer }

func (l kindLogger) Warn(m string)                      { l.write(m) }
func (l kindLogger) Warnf(f string, a ...any)           { l.write(fmt.Sprintf(f, a...)) }
func (l kindLogger) Error(m string)                     { l.write(m) }
func (l kindLogger) Errorf(f string, a ...any)          { l.write(fmt.Sprintf(f, a...)) }
func (l kindLogger) V(kindlog.Level) kindlog.InfoLogger { return l }
func (l kindLogger) Info(m string)                      { l.write(m) }
func (l kindLogger) Infof(f string, a ...any)           { l.write(fmt.Sprintf(f, a...)) }
func (l kindLogger) Enabled() bool                      { return l.w != nil }

func (l kindLogger) write(m string) {
	if l.w != nil {
		fmt.Fprintln(l.w, "kind:", strings.TrimRight(m, "\n"))
	}
}

func (d *Driver) kindDir() string { return filepath.Join(d.Dir, "kind") }

// kindName is the kind cluster of the driver's stack.
func (d *Driver) kindName() string { return "aware-" + d.stackName() }

// kindClusters is Driver.Kind, else kind's library.
func (d *Driver) kindClusters() (KindClusters, error) {
	if d.Kind != nil {
		return d.Kind, nil
	}
	return NewKindClusters(d.out())
}

// startKind builds the project's image, creates the stack's kind cluster
// (or finds it), loads the image into its nodes and returns cfg with the
// cluster's kubeconfig and the loaded image.
func (d *Driver) startKind(ctx context.Context, cfg Config) (Config, error) {
	kc, err := d.kindClusters()
	if err != nil {
		return cfg, fmt.Errorf("testbed: kind target: %w", err)
	}
	built, archive, err := d.buildImage(ctx, cfg.Options.Images.Aware)
	if err != nil {
		return cfg, err
	}
	name, kubeconfig := d.kindName(), filepath.Join(d.kindDir(), "kubeconfig")
	if err := os.MkdirAll(d.kindDir(), 0o700); err != nil {
		return cfg, fmt.Errorf("testbed: %w", err)
	}
	names, err := kc.List()
	if err != nil {
		return cfg, fmt.Errorf("testbed: kind clusters: %w", err)
	}
	if slices.Contains(names, name) {
		fmt.Fprintf(d.out(), "kind cluster %s exists: reusing it\n", name)
		err = kc.ExportKubeconfig(name, kubeconfig)
	} else {
		fmt.Fprintf(d.out(), "creating kind cluster %s (%d workers, %s)\n", name, cfg.Kind.Workers, cfg.Kind.NodeImage)
		err = kc.Create(name, cfg.Kind.clusterConfig(), cfg.Kind.NodeImage, kubeconfig)
	}
	if err != nil {
		return cfg, fmt.Errorf("testbed: kind cluster %s: %w", name, err)
	}
	fmt.Fprintf(d.out(), "loading %s into %s\n", built.Ref, name)
	if err := kc.LoadImage(name, archive); err != nil {
		return cfg, fmt.Errorf("testbed: kind cluster %s: %w", name, err)
	}
	cfg.Kubeconfig, cfg.Context = kubeconfig, ""
	cfg.Options.Images.Aware = built.Ref
	return cfg, nil
}

// stopKind deletes the stack's kind cluster.
func (d *Driver) stopKind() error {
	kc, err := d.kindClusters()
	if err != nil {
		return fmt.Errorf("testbed: kind target: %w", err)
	}
	if err := kc.Delete(d.kindName(), filepath.Join(d.kindDir(), "kubeconfig")); err != nil {
		return fmt.Errorf("testbed: deleting kind cluster %s: %w", d.kindName(), err)
	}
	return os.RemoveAll(d.kindDir())
}

// buildImage builds the project's image for the repository of ref (its
// tag is replaced by the digest's) from Driver.Binary, else from the
// module at Driver.Source (else the working directory's), and writes it
// as a tarball in Dir/image.
func (d *Driver) buildImage(ctx context.Context, ref string) (image.Built, string, error) {
	repo := ref
	if i := strings.LastIndexAny(ref, ":@"); i > strings.LastIndex(ref, "/") {
		repo = ref[:i]
	}
	dir := filepath.Join(d.Dir, "image")
	var built image.Built
	var err error
	if d.Binary != "" {
		built, err = image.Build(d.Binary, repo, "")
	} else {
		fmt.Fprintf(d.out(), "building the aware image from %s\n", cmp.Or(d.Source, "the working directory's module"))
		built, err = image.FromSource(ctx, d.Source, dir, repo, "")
	}
	if err != nil {
		return image.Built{}, "", err
	}
	archive, err := image.WriteTarballIn(dir, built)
	if err != nil {
		return image.Built{}, "", err
	}
	return built, archive, nil
}
