package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// serviceRange holds the cluster IPs of Services: a /16, since a testbed of
// 1000 apps has a Service each (a /24 ran out at the 254th: "failed to
// allocate a serviceIP: range is full"). serviceIP is its first address,
// the kubernetes Service's cluster IP.
const (
	serviceRange = "10.0.0.0/16"
	serviceIP    = "10.0.0.1"
)

// Config describes a local control plane.
type Config struct {
	// Dir holds its state: pki/, etcd/, logs/ (with the audit log of
	// components under test, see Audit), kubeconfig and state.json.
	Dir string
	// Binaries are the executables, from Install.
	Binaries Binaries
	// Nodes is the number of fake nodes (default 4), each with PodsPerNode
	// pod capacity (default 1100), NodeCPU cores (default 64) and
	// NodeMemory bytes (default 256 GiB).
	Nodes, PodsPerNode int
	NodeCPU            int
	NodeMemory         int64
	// Archs are the nodes' kubernetes.io/arch labels, given in turn
	// (default amd64 and ppc64le: the paper's x86 and Power nodes, which
	// the generated manifests select).
	Archs []string
	// Detach lets the processes outlive the caller (`aware cluster up`);
	// otherwise they receive SIGKILL when it dies.
	Detach bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultArchs are the node architectures of a cluster by default.
func DefaultArchs() []string { return []string{"amd64", "ppc64le"} }

// Cluster is a running control plane.
type Cluster struct {
	// Kubeconfig is the path of an admin kubeconfig (system:masters).
	Kubeconfig string
	// Server is the apiserver's URL.
	Server string
	dir    string
	st     state
}

// state is what Down (possibly in another process) needs: the processes in
// start order and the apiserver's address.
type state struct {
	Server string `json:"server"`
	Procs  []proc `json:"procs"`
}

type proc struct {
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	Path string `json:"path"`
	// Args and Detach start it again (Restart).
	Args   []string `json:"args,omitempty"`
	Detach bool     `json:"detach,omitempty"`
}

// Up starts the control plane described by cfg, or returns the running one if
// its processes are alive and the apiserver is ready (so repeating Up is
// cheap). A stale or partial one is stopped first. Every process listens on
// loopback only.
func Up(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("cluster: Config.Dir is empty")
	}
	if len(cfg.Archs) == 0 {
		cfg.Archs = DefaultArchs()
	}
	if cfg.Nodes < 0 || cfg.PodsPerNode < 0 || cfg.NodeCPU < 0 || cfg.NodeMemory < 0 {
		return nil, fmt.Errorf("cluster: negative node count or capacity (Nodes %d, PodsPerNode %d, NodeCPU %d, NodeMemory %d)", cfg.Nodes, cfg.PodsPerNode, cfg.NodeCPU, cfg.NodeMemory)
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 4
	}
	if cfg.PodsPerNode == 0 {
		cfg.PodsPerNode = 1100
	}
	if cfg.NodeCPU == 0 {
		cfg.NodeCPU = 64
	}
	if cfg.NodeMemory == 0 {
		cfg.NodeMemory = 256 << 30
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if st, err := readState(dir); err == nil {
		c.st, c.Server = st, st.Server
		if c.alive() && c.ready(ctx) == nil {
			fmt.Fprintf(cfg.Log, "control plane already running at %s\n", c.Server)
			return c, nil
		}
		fmt.Fprintln(cfg.Log, "stopping a stale control plane…")
		if err := c.Down(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.start(ctx, cfg); err != nil {
		if derr := c.Down(context.WithoutCancel(ctx)); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	return c, nil
}

// Attach returns the control plane running in dir (started by Up), or an
// error if none is running and ready there; it starts nothing.
func Attach(ctx context.Context, dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	st, err := readState(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: no control plane in %s: %w", dir, err)
	}
	c := &Cluster{dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), st: st, Server: st.Server}
	if !c.alive() {
		return nil, fmt.Errorf("cluster: the control plane in %s is not running", dir)
	}
	if err := c.ready(ctx); err != nil {
		return nil, fmt.Errorf("cluster: the control plane in %s is not ready: %w", dir, err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, cfg Config) error {
	start := time.Now()
	for _, d := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	p, err := newPKI(filepath.Join(c.dir, "pki"))
	if err != nil {
		return err
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	c.st = state{Server: c.Server}

	admin, err := p.client("admin", "aware-admin", "system:masters")
	if err != nil {
		return err
	}
	kcm, err := p.client("controller-manager", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := p.client("scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	kwokID, err := p.client("kwok", "kwok-controller", "system:masters")
	if err != nil {
		return err
	}
	kubeconfigs := map[string]client{"kubeconfig": admin, "controller-manager.kubeconfig": kcm, "scheduler.kubeconfig": sched, "kwok.kubeconfig": kwokID}
	for name, id := range kubeconfigs {
		if err := writeKubeconfig(filepath.Join(c.dir, name), c.Server, p.caCert, id); err != nil {
			return err
		}
	}
	if err := writeSchedulerConfig(filepath.Join(c.dir, "scheduler.yaml"), filepath.Join(c.dir, "scheduler.kubeconfig")); err != nil {
		return err
	}
	stages := filepath.Join(c.dir, "kwok.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	policy := filepath.Join(c.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}

	b := cfg.Binaries
	run := func(name, path string, args []string, probe localproc.Probe) error {
		opts := []localproc.Option{localproc.WithLogFile(filepath.Join(c.dir, "logs", name+".log")), localproc.WithProcessGroup()}
		if cfg.Detach {
			opts = append(opts, localproc.WithoutDeathSignal())
		}
		pr, err := localproc.Start(path, args, opts...)
		if err != nil {
			return fmt.Errorf("cluster: starting %s: %w", name, err)
		}
		c.st.Procs = append(c.st.Procs, proc{Name: name, Pid: pr.Pid(), Path: path, Args: args, Detach: cfg.Detach})
		if err := writeState(c.dir, c.st); err != nil {
			return err
		}
		if probe == nil {
			return nil
		}
		if err := pr.WaitReady(ctx, 60*time.Second, 100*time.Millisecond, probe); err != nil {
			return fmt.Errorf("cluster: %s is not ready: %w", name, err)
		}
		fmt.Fprintf(cfg.Log, "%s ready (%s)\n", name, time.Since(start).Round(10*time.Millisecond))
		return nil
	}
	if err := run("etcd", b.Etcd, []string{
		"--name=aware", "--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=aware=" + peerURL, "--unsafe-no-fsync", "--log-level=warn",
	}, localproc.HTTPProbe(http.DefaultClient, etcdURL+"/health", http.StatusOK)); err != nil {
		return err
	}
	hc, err := c.adminClient()
	if err != nil {
		return err
	}
	if err := run("kube-apiserver", b.APIServer, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[2]),
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + p.serverCert, "--tls-private-key-file=" + p.serverKey,
		"--client-ca-file=" + p.caCert,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saPub, "--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=" + serviceRange,
		"--authorization-mode=RBAC", "--allow-privileged=true",
	}, c.auditArgs(policy)...), localproc.HTTPProbe(hc, c.Server+"/readyz", http.StatusOK)); err != nil {
		return err
	}
	if err := run("kube-controller-manager", b.ControllerManager, []string{
		"--kubeconfig=" + filepath.Join(c.dir, "controller-manager.kubeconfig"),
		"--authentication-skip-lookup", "--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false", "--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.saKey, "--root-ca-file=" + p.caCert,
		"--kube-api-qps=500", "--kube-api-burst=1000", "--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
	}, nil); err != nil {
		return err
	}
	if err := run("kube-scheduler", b.Scheduler, []string{
		"--config=" + filepath.Join(c.dir, "scheduler.yaml"),
		"--authentication-skip-lookup", "--bind-address=127.0.0.1", "--secure-port=0",
	}, nil); err != nil {
		return err
	}
	if err := run("kwok", b.Kwok, []string{
		"--kubeconfig=" + filepath.Join(c.dir, "kwok.kubeconfig"),
		"--config=" + stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=10.1.0.1", "--cidr=10.1.0.0/16", "--node-lease-duration-seconds=40", "--server-address=127.0.0.1:" + strconv.Itoa(ports[3]),
	}, nil); err != nil {
		return err
	}
	if err := c.createNodes(ctx, hc, cfg); err != nil {
		return err
	}
	if err := c.waitNodesReady(ctx, hc, cfg.Nodes); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Log, "control plane up at %s with %d nodes in %s; kubeconfig %s\n", c.Server, cfg.Nodes, time.Since(start).Round(10*time.Millisecond), c.Kubeconfig)
	return nil
}

// Down stops the processes in reverse start order (etcd last: an apiserver
// without etcd hangs on shutdown), each with SIGTERM and then SIGKILL after
// 15 s, and forgets them. The state directory (PKI, etcd data) stays.
func (c *Cluster) Down(ctx context.Context) error {
	var errs []error
	for i := len(c.st.Procs) - 1; i >= 0; i-- {
		if err := stopPid(ctx, c.st.Procs[i], 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.st.Procs = nil
	if err := os.Remove(filepath.Join(c.dir, "state.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Stop stops the control plane whose state is in dir, if any (`aware cluster
// down` in a process other than the one that started it).
func Stop(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	st, err := readState(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	c := &Cluster{dir: abs, st: st}
	return c.Down(ctx)
}

// alive reports whether every recorded process still runs its binary.
func (c *Cluster) alive() bool {
	if len(c.st.Procs) == 0 {
		return false
	}
	for _, p := range c.st.Procs {
		if !running(p) {
			return false
		}
	}
	return true
}

func (c *Cluster) ready(ctx context.Context) error {
	hc, err := c.adminClient()
	if err != nil {
		return err
	}
	return localproc.HTTPProbe(hc, c.Server+"/readyz", http.StatusOK)(ctx)
}

// adminClient is an HTTP client for the apiserver with the admin identity
// (system:masters) that start creates.
func (c *Cluster) adminClient() (*http.Client, error) {
	p := pkiAt(filepath.Join(c.dir, "pki"))
	return adminHTTP(p.caCert, p.clientFiles("admin"))
}

// running reports whether pid is alive and still the recorded binary (a
// recycled pid is not ours).
func running(p proc) bool {
	if p.Pid <= 0 || syscall.Kill(p.Pid, 0) != nil {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.Pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == p.Path
}

func stopPid(ctx context.Context, p proc, grace time.Duration) error {
	if !running(p) {
		return nil
	}
	if err := syscall.Kill(p.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cluster: stopping %s (pid %d): %w", p.Name, p.Pid, err)
	}
	deadline := time.Now().Add(grace)
	for running(p) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; running(p) && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if running(p) {
		return fmt.Errorf("cluster: %s (pid %d) survived SIGKILL", p.Name, p.Pid)
	}
	return nil
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("cluster: %s: %w", filepath.Join(dir, "state.json"), err)
	}
	return st, nil
}

func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "state.json"), b, 0o644); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		p, err := localproc.FreePort()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// adminHTTP is an HTTP client that trusts the cluster CA and presents id.
func adminHTTP(caCert string, id client) (*http.Client, error) {
	pemCA, err := os.ReadFile(caCert)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, fmt.Errorf("cluster: %s holds no certificate", caCert)
	}
	pair, err := tls.LoadX509KeyPair(id.cert, id.key)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	}}, nil
}

// apiDo sends a JSON request to the apiserver and decodes a JSON answer into
// out unless it is nil; a status outside 2xx is an error quoting the body.
func apiDo(ctx context.Context, hc *http.Client, method, url string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// FreshDir returns dir made absolute, created if absent, for a control
// plane that must start empty (a suite's or a bench's working directory):
// a directory with anything in it is refused, naming its first entries,
// since Up would reuse the etcd data of a previous run and its objects.
func FreshDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("cluster: %w", err)
	case len(entries) > 0:
		names := make([]string, 0, 3)
		for _, e := range entries[:min(3, len(entries))] {
			names = append(names, e.Name())
		}
		return "", fmt.Errorf("cluster: working directory %s is not empty (%s…): use a new one (a previous run's etcd data would hold its objects)", abs, strings.Join(names, ", "))
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return abs, nil
}
