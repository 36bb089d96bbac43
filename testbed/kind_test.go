package testbed

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// fakeKind records what the driver asks of kind.
type fakeKind struct {
	clusters  map[string]bool
	created   []string
	config    string
	loaded    []string // cluster/ref
	deleted   []string
	createErr error
}

func (f *fakeKind) List() ([]string, error) {
	var out []string
	for n := range f.clusters {
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeKind) Create(name string, config []byte, nodeImage, kubeconfig string) error {
	if f.createErr != nil {
		return f.createErr
	}
	f.clusters[name] = true
	f.created = append(f.created, name+" "+nodeImage)
	f.config = string(config)
	return os.WriteFile(kubeconfig, []byte("kind kubeconfig\n"), 0o600)
}

func (f *fakeKind) ExportKubeconfig(name, kubeconfig string) error {
	return os.WriteFile(kubeconfig, []byte("kind kubeconfig\n"), 0o600)
}

func (f *fakeKind) LoadImage(cluster, archive string) error {
	m, err := tarball.LoadManifest(func() (rc io.ReadCloser, err error) { return os.Open(archive) })
	if err != nil {
		return err
	}
	f.loaded = append(f.loaded, cluster+"/"+m[0].RepoTags[0])
	return nil
}

func (f *fakeKind) Delete(name, _ string) error {
	delete(f.clusters, name)
	f.deleted = append(f.deleted, name)
	return nil
}

// staticBinary is a statically linked Linux program to put in the image:
// the Go distribution's gofmt.
func staticBinary(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	return filepath.Join(strings.TrimSpace(string(out)), "bin", "gofmt")
}

func TestKindTargetCreatesLoadsAndDeletes(t *testing.T) {
	fk := &fakeKind{clusters: map[string]bool{"other": true}}
	d := &Driver{Dir: t.TempDir(), Stack: "s1", Kind: fk, Binary: staticBinary(t)}
	cfg := DefaultConfig()
	cfg.Target, cfg.Apps = TargetKind, 3
	cfg.Kind.Workers = 2

	got, err := d.startKind(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"aware-s1 " + DefaultKindConfig().NodeImage}, fk.created)
	assert.Equal(t, 2, strings.Count(fk.config, "role: worker"))
	assert.Equal(t, 1, strings.Count(fk.config, "role: control-plane"))
	assert.Equal(t, filepath.Join(d.Dir, "kind", "kubeconfig"), got.Kubeconfig)
	ref, err := name.NewTag(got.Options.Images.Aware)
	require.NoError(t, err, "the apps run a tagged image")
	assert.Equal(t, "ghcr.io/aware-autoscaler/aware", ref.Context().String())
	assert.Len(t, ref.TagStr(), 12, "tagged by its digest")
	assert.Equal(t, []string{"aware-s1/" + got.Options.Images.Aware}, fk.loaded, "the image is loaded under the reference the apps use")

	// Up again: the cluster is reused, the image loaded again (a changed
	// binary is a new tag).
	again, err := d.startKind(context.Background(), cfg)
	require.NoError(t, err)
	assert.Len(t, fk.created, 1)
	assert.Equal(t, got.Options.Images.Aware, again.Options.Images.Aware, "the same binary is the same image")

	require.NoError(t, d.stopKind())
	assert.Equal(t, []string{"aware-s1"}, fk.deleted)
	assert.NotContains(t, fk.clusters, "aware-s1")
	assert.Contains(t, fk.clusters, "other", "other clusters are left alone")
	_, err = os.Stat(d.kindDir())
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

// The refusal this machine's engine gives kind (docker 20.10 whose
// capability bounding set lacks CAP_SYS_RESOURCE) is explained.
func TestKindRefusalIsExplained(t *testing.T) {
	refused := &kindexec.RunError{
		Command: []string{"docker", "run", "--privileged", "kindest/node"},
		Output:  []byte("abc123\ndocker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown\n\nRun 'docker run --help' for more information\n"),
		Inner:   errors.New("exit status 125"),
	}
	fk := &fakeKind{clusters: map[string]bool{}, createErr: explainKind(refused)}
	d := &Driver{Dir: t.TempDir(), Kind: fk, Binary: staticBinary(t)}
	cfg := DefaultConfig()
	cfg.Target = TargetKind
	_, err := d.startKind(context.Background(), cfg)
	require.Error(t, err)
	for _, want := range []string{"kind cluster aware-dev", "unable to apply caps: operation not permitted", "refuses privileged containers", "--target local"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "docker run --help")
	assert.Equal(t, "plain", explainKind(errors.New("plain")).Error())
	assert.NoError(t, explainKind(nil))
}

func TestInPlaceFallbackOnOldClusters(t *testing.T) {
	for _, tc := range []struct {
		minor string
		want  v1alpha1.UpdateMode
	}{{"31", v1alpha1.UpdateModeRecreate}, {"32+", v1alpha1.UpdateModeRecreate}, {"33", v1alpha1.UpdateModeInPlaceOrRecreate}, {"37", v1alpha1.UpdateModeInPlaceOrRecreate}} {
		t.Run(tc.minor, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/version" {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(`{"major":"1","minor":"` + tc.minor + `","gitVersion":"v1.` + tc.minor + `.0"}`))
			}))
			defer srv.Close()
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			require.NoError(t, os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+srv.URL+
				"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"), 0o600))
			var out strings.Builder
			d := &Driver{Dir: t.TempDir(), Out: &out}
			cfg := DefaultConfig()
			cfg.Target, cfg.Kubeconfig = TargetKubeconfig, kc
			got, err := d.checkInPlace(context.Background(), cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Options.AppOptions.UpdateMode)
			if tc.want == v1alpha1.UpdateModeRecreate {
				assert.Contains(t, out.String(), "warning: the cluster runs Kubernetes 1."+tc.minor+", which does not resize pods in place")
			} else {
				assert.Empty(t, out.String())
			}
		})
	}
	d := &Driver{Dir: t.TempDir()}
	cfg := DefaultConfig()
	cfg.Target, cfg.Kubeconfig = TargetKubeconfig, filepath.Join(t.TempDir(), "missing")
	_, err := d.checkInPlace(context.Background(), cfg)
	assert.ErrorContains(t, err, "kubeconfig "+cfg.Kubeconfig)
}

func TestStaleLocksAreRemoved(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, ".pulumi", "locks", "organization", "aware-testbed", "dev")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	host, err := os.Hostname()
	require.NoError(t, err)
	// A process that ran and is gone.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid
	write := func(name string, pid int, host string) string {
		p := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(p, []byte(`{"pid":`+strconv.Itoa(pid)+`,"username":"root","hostname":"`+host+`","timestamp":"2026-11-27T10:00:00Z"}`), 0o600))
		return p
	}
	stale := write("stale", dead, host)
	require.NoError(t, os.WriteFile(stale+".attrs", []byte("{}"), 0o600))
	live := write("live", os.Getpid(), host)
	other := write("other", dead, "another-host")
	var out strings.Builder
	require.NoError(t, removeStaleLocks(state, &out))
	assert.NoFileExists(t, stale)
	assert.NoFileExists(t, stale+".attrs")
	assert.FileExists(t, live, "a running process keeps its lock")
	assert.FileExists(t, other, "another host's lock is not ours to judge")
	assert.Contains(t, out.String(), "removing the stack lock of pid "+strconv.Itoa(dead))
	require.NoError(t, removeStaleLocks(filepath.Join(state, "none"), &out), "no locks folder yet")
}

func TestValidateBeforeCluster(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Target = TargetKind
	require.NoError(t, validateBeforeCluster(cfg), "no kubeconfig and no credentials yet: the cluster and the stack provide them")
	cfg.Kind.Workers, cfg.Apps = -1, 2000
	err := validateBeforeCluster(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kind.workers -1")
	assert.Contains(t, err.Error(), "apps 2000")
}

func TestGCPCredentials(t *testing.T) {
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS here")
	}}
	home := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	_, err := gcpCredentials(ctx, getenv, home, noDNS)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gcloud auth application-default login")

	adc := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(adc), 0o700))
	require.NoError(t, os.WriteFile(adc, []byte("{}"), 0o600))
	from, err := gcpCredentials(ctx, getenv, home, noDNS)
	require.NoError(t, err)
	assert.Equal(t, adc, from)

	env["GOOGLE_APPLICATION_CREDENTIALS"] = filepath.Join(home, "missing.json")
	_, err = gcpCredentials(ctx, getenv, home, noDNS)
	assert.ErrorContains(t, err, "GOOGLE_APPLICATION_CREDENTIALS names "+env["GOOGLE_APPLICATION_CREDENTIALS"])

	env["GOOGLE_CREDENTIALS"] = `{"type":"service_account"}`
	from, err = gcpCredentials(ctx, getenv, home, noDNS)
	require.NoError(t, err)
	assert.Equal(t, "$GOOGLE_CREDENTIALS", from)

	cfg := DefaultConfig()
	cfg.Target = TargetGKE
	require.NoError(t, validateBeforeCluster(cfg), "gke: no kubeconfig, credentials from the stack")
}
