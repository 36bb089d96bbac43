package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optremove"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
	"github.com/aware-autoscaler/aware/testbed/toolchain"
)

// Driver runs the testbed program through the Automation API with the
// project's own Pulumi toolchain, a local file backend and passphrase
// secrets: no Pulumi Cloud account, no language host, no plugin download.
// Its directory holds the state (state/), the stack's settings and
// configuration (workspace/), the Pulumi home with the Kubernetes provider
// (home/) and the passphrase (passphrase, mode 0600, generated once unless
// PULUMI_CONFIG_PASSPHRASE is set).
type Driver struct {
	Dir   string
	Stack string
	Tools toolchain.Tools
	// Aware is the aware binary the local target's supervisor runs
	// (`aware testbed local-run`); Traces the folder of real traces its
	// twin replays (generator.LoadShapes).
	Aware, Traces string
	// Out receives the engine's progress (nil discards it).
	Out io.Writer
	// Source is the project's module the kind target builds its image from
	// ("" is the module of the working directory); Binary, when set, is a
	// static Linux aware binary to use instead.
	Source, Binary string
	// Kind is the kind target's access to kind (nil: kind's library on
	// the machine's container engine).
	Kind KindClusters
}

// DefaultStack is the stack name when Driver.Stack is empty.
const DefaultStack = "dev"

func (d *Driver) stackName() string {
	if d.Stack == "" {
		return DefaultStack
	}
	return d.Stack
}

func (d *Driver) out() io.Writer {
	if d.Out == nil {
		return io.Discard
	}
	return d.Out
}

// passphrase returns $PULUMI_CONFIG_PASSPHRASE, else the directory's
// passphrase file, created on first use.
func (d *Driver) passphrase() (string, error) {
	if p := os.Getenv("PULUMI_CONFIG_PASSPHRASE"); p != "" {
		return p, nil
	}
	path := filepath.Join(d.Dir, "passphrase")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("testbed: %w", err)
	}
	p, err := randomHex(24)
	if err != nil {
		return "", err
	}
	// A torn passphrase would lock the stack's secrets away for good.
	if err := atomicfile.Write(path, []byte(p+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	return p, nil
}

// stack opens (creating if needed) the driver's stack with StackProgram.
func (d *Driver) stack(ctx context.Context) (auto.Stack, error) {
	if d.Tools.Pulumi == "" {
		return auto.Stack{}, fmt.Errorf("testbed: no Pulumi CLI: %w", toolchain.ErrNotBuilt)
	}
	state, home, work := filepath.Join(d.Dir, "state"), filepath.Join(d.Dir, "home"), filepath.Join(d.Dir, "workspace")
	for _, dir := range []string{state, home, work} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return auto.Stack{}, fmt.Errorf("testbed: %w", err)
		}
	}
	if err := removeStaleLocks(state, d.out()); err != nil {
		return auto.Stack{}, err
	}
	if err := d.Tools.InstallPlugin(ctx, home, d.out()); err != nil {
		return auto.Stack{}, err
	}
	pass, err := d.passphrase()
	if err != nil {
		return auto.Stack{}, err
	}
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: d.Tools.PulumiRoot, SkipVersionCheck: true})
	if err != nil {
		return auto.Stack{}, fmt.Errorf("testbed: the Pulumi CLI at %s: %w", d.Tools.PulumiRoot, err)
	}
	backend := "file://" + state
	s, err := auto.UpsertStackInlineSource(ctx, d.stackName(), Project, StackProgram,
		auto.Pulumi(cmd),
		auto.PulumiHome(home),
		// The stack's settings (its configuration) live in the work
		// directory's Pulumi.<stack>.yaml: it must outlive the command.
		auto.WorkDir(work),
		auto.SecretsProvider("passphrase"),
		auto.Project(workspace.Project{
			Name:    Project,
			Runtime: workspace.NewProjectRuntimeInfo("go", nil),
			Backend: &workspace.ProjectBackend{URL: backend},
		}),
		auto.EnvVars(map[string]string{
			"PULUMI_CONFIG_PASSPHRASE": pass,
			"PULUMI_BACKEND_URL":       backend,
			"PULUMI_SKIP_UPDATE_CHECK": "true",
			"PULUMI_HOME":              home,
			// Plugins come from the home only: never from the network.
			"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
			// The file backend rewrites the whole state after every
			// step: at 1000 apps (4000 objects, 17.7 MB of state) that
			// made up quadratic, over 30 minutes for half the apps.
			// The state is saved once, at the end; an interrupted up is
			// resumed by running up again (server-side apply adopts the
			// objects it had made, with the same values).
			"PULUMI_SKIP_CHECKPOINTS": "true",
		}),
	)
	if err != nil {
		return auto.Stack{}, fmt.Errorf("testbed: stack %s: %w", d.stackName(), err)
	}
	return s, nil
}

// configure writes cfg into the stack's configuration, keeping the
// stack's credentials (generated on its first configuration) unless cfg
// has its own.
func (d *Driver) configure(ctx context.Context, s auto.Stack, cfg Config) error {
	if cfg.Credentials == (manifests.Credentials{}) {
		if v, err := s.GetConfig(ctx, Project+":"+KeyCredentials); err == nil && v.Value != "" {
			if err := json.Unmarshal([]byte(v.Value), &cfg.Credentials); err != nil {
				return fmt.Errorf("testbed: the stack's credentials: %w", err)
			}
		} else {
			c, err := NewCredentials()
			if err != nil {
				return err
			}
			cfg.Credentials = c
		}
	}
	m, err := cfg.StackConfig()
	if err != nil {
		return err
	}
	if err := s.SetAllConfig(ctx, m); err != nil {
		return fmt.Errorf("testbed: setting the stack's configuration: %w", err)
	}
	return nil
}

// Preview shows what Up would change.
func (d *Driver) Preview(ctx context.Context, cfg Config) (auto.PreviewResult, error) {
	s, err := d.stack(ctx)
	if err != nil {
		return auto.PreviewResult{}, err
	}
	if err := d.configure(ctx, s, cfg); err != nil {
		return auto.PreviewResult{}, err
	}
	return s.Preview(ctx, optpreview.ProgressStreams(d.out()), optpreview.Color("never"))
}

// Up deploys cfg and returns the stack's outputs. Running it again with the
// same cfg changes nothing. The target first checks the machine and starts
// or finds its cluster (the local target's control plane in Dir/cluster,
// unless cfg names a kubeconfig; the kind target's cluster), and runs
// after the deployment what plays the cluster's pods outside it (the local
// target's supervisor, whose endpoints Up returns).
func (d *Driver) Up(ctx context.Context, cfg Config) (auto.OutputMap, *local.Endpoints, error) {
	if err := validateBeforeCluster(cfg.ForTarget()); err != nil {
		return nil, nil, err
	}
	t, _ := targetOf(cfg.Target) // validated
	cfg, err := t.start(ctx, d, cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := d.stack(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := d.configure(ctx, s, cfg); err != nil {
		return nil, nil, err
	}
	for _, p := range t.plugins() {
		if err := s.Workspace().InstallPlugin(ctx, p.name, "v"+p.version); err != nil {
			return nil, nil, fmt.Errorf("testbed: the %s target needs Pulumi's %s provider %s (pulumi plugin install resource %s %s): %w", t.name(), p.name, p.version, p.name, p.version, err)
		}
	}
	res, err := s.Up(ctx, optup.ProgressStreams(d.out()), optup.Color("never"))
	if err != nil {
		return nil, nil, fmt.Errorf("testbed: pulumi up: %w", err)
	}
	ep, err := t.started(ctx, d, cfg)
	return res.Outputs, ep, err
}

// validateBeforeCluster validates cfg before anything is started or
// deployed: everything but the kubeconfig of the targets whose cluster the
// driver starts (local, kind), which provides it, and the credentials,
// which the stack's configuration provides when cfg has none.
func validateBeforeCluster(cfg Config) error {
	if t, ok := targetOf(cfg.Target); ok && t.kubeconfigFromUp() {
		cfg.Kubeconfig = "-"
	}
	if cfg.Credentials == (manifests.Credentials{}) {
		cfg.Credentials = manifests.Credentials{ObjectStoreAccessKey: "-", ObjectStoreSecretKey: "-", PostgresPassword: "-"}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("testbed config: %w", err)
	}
	return nil
}

// Outputs returns the stack's outputs (empty before the first Up).
func (d *Driver) Outputs(ctx context.Context) (auto.OutputMap, error) {
	s, err := d.stack(ctx)
	if err != nil {
		return nil, err
	}
	return s.Outputs(ctx)
}

// Down deletes everything Up made, as the stack's target does it, then the
// stack. The local target stops the supervisor and the control plane,
// whose objects go with it, and the kind target deletes its cluster: the
// stack is forgotten without deleting its objects one by one (a destroy of
// 1000 apps' 4000 objects took over 20 minutes). On an existing cluster,
// or gke, whose cluster is a resource of the stack, the stack's resources
// are destroyed.
func (d *Driver) Down(ctx context.Context) error {
	s, err := d.stack(ctx)
	if err != nil {
		return err
	}
	name, _ := s.GetConfig(ctx, Project+":"+KeyTarget)
	if err := stackTarget(Target(name.Value)).down(ctx, d, s); err != nil {
		return err
	}
	if err := s.Workspace().RemoveStack(ctx, d.stackName(), optremove.Force()); err != nil {
		return fmt.Errorf("testbed: removing stack %s: %w", d.stackName(), err)
	}
	return nil
}

// destroy deletes the stack's resources one by one.
func (d *Driver) destroy(ctx context.Context, s auto.Stack) error {
	if _, err := s.Destroy(ctx, optdestroy.ProgressStreams(d.out()), optdestroy.Color("never")); err != nil {
		return fmt.Errorf("testbed: pulumi destroy: %w", err)
	}
	return nil
}

// NewCredentials draws the external services' credentials at random.
func NewCredentials() (manifests.Credentials, error) {
	var c manifests.Credentials
	for _, f := range []*string{&c.ObjectStoreAccessKey, &c.ObjectStoreSecretKey, &c.PostgresPassword} {
		v, err := randomHex(16)
		if err != nil {
			return c, err
		}
		*f = v
	}
	return c, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// removeStaleLocks removes the file backend's stack locks left by Pulumi
// processes of this host that no longer run (an up killed mid-way), so
// that the next up resumes instead of failing on the lock. Locks of live
// processes, or of other hosts, are left to the engine, which names them.
func removeStaleLocks(state string, out io.Writer) error {
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	dir := filepath.Join(state, ".pulumi", "locks")
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var lock struct {
			Pid      int       `json:"pid"`
			Hostname string    `json:"hostname"`
			Time     time.Time `json:"timestamp"`
		}
		if json.Unmarshal(b, &lock) != nil || lock.Hostname != host || lock.Pid <= 0 || processAlive(lock.Pid) {
			return nil
		}
		fmt.Fprintf(out, "removing the stack lock of pid %d (%s), which no longer runs: resuming its update\n", lock.Pid, lock.Time.Format(time.RFC3339))
		// The backend's blob store keeps the file's attributes beside it.
		if err := os.Remove(path + ".attrs"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return os.Remove(path)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("testbed: stack locks: %w", err)
	}
	return nil
}

// processAlive reports whether pid is a running process of this host.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
