package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestStagingModulesAndVersions(t *testing.T) {
	goMod := []byte(`module k8s.io/kubernetes

require (
	k8s.io/api v0.0.0
	k8s.io/klog/v2 v2.130.1
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/cri-client => ./staging/src/k8s.io/cri-client
	k8s.io/gengo/v2 => k8s.io/gengo/v2 v2.0.0
)
`)
	require.Equal(t, []string{"k8s.io/api", "k8s.io/cri-client"}, stagingModules(goMod))

	v, err := stagingVersion("v1.34.10")
	require.NoError(t, err)
	require.Equal(t, "v0.34.10", v)
	for _, bad := range []string{"1.34.10", "v2.0.0", "v1.34", "v1.34.10-rc.1"} {
		_, err := stagingVersion(bad)
		require.ErrorContains(t, err, bad)
	}

	flags := kubeLdflags("v1.34.10")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v1.34.10",
		"-X k8s.io/component-base/version.gitMinor=34",
		"-X k8s.io/client-go/pkg/version.gitMajor=1",
	} {
		require.Contains(t, flags, want)
	}
}

func TestPKI(t *testing.T) {
	dir := t.TempDir()
	p, err := newPKI(filepath.Join(dir, "pki"))
	require.NoError(t, err)
	admin, err := p.client("admin", "aware-admin", "system:masters")
	require.NoError(t, err)

	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.caCert)
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(caPEM))

	server := readCert(t, p.serverCert)
	_, err = server.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kubernetes.default.svc"})
	require.NoError(t, err)
	_, err = server.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	require.NoError(t, err)

	cert := readCert(t, admin.cert)
	require.Equal(t, "aware-admin", cert.Subject.CommonName)
	require.Equal(t, []string{"system:masters"}, cert.Subject.Organization)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	_, err = tls.LoadX509KeyPair(admin.cert, admin.key)
	require.NoError(t, err)
	st, err := os.Stat(admin.key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "private keys are owner-only")

	// A second run keeps the identity, so existing kubeconfigs stay valid.
	before, err := os.ReadFile(p.caCert)
	require.NoError(t, err)
	p2, err := newPKI(filepath.Join(dir, "pki"))
	require.NoError(t, err)
	after, err := os.ReadFile(p2.caCert)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk, path)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c
}

func TestKubeconfigAndStages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	require.NoError(t, writeKubeconfig(path, "https://127.0.0.1:6443", "/ca.crt", client{cert: "/a.crt", key: "/a.key"}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
		CurrentContext string `json:"current-context"`
	}
	require.NoError(t, yaml.Unmarshal(b, &kc))
	require.Equal(t, "https://127.0.0.1:6443", kc.Clusters[0].Cluster.Server)
	require.Equal(t, "aware-local", kc.CurrentContext)

	// The configuration plays pod stages in parallel; every stage document
	// parses and names itself; the resize stage exists.
	docs := strings.Split(string(kwokStages), "\n---\n")
	var kwokCfg struct {
		Kind    string `json:"kind"`
		Options struct {
			PodPlayStageParallelism int `json:"podPlayStageParallelism"`
		} `json:"options"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &kwokCfg))
	require.Equal(t, "KwokConfiguration", kwokCfg.Kind)
	require.Equal(t, 16, kwokCfg.Options.PodPlayStageParallelism)
	var names []string
	for _, doc := range docs[1:] {
		var st struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &st))
		require.Equal(t, "Stage", st.Kind)
		names = append(names, st.Metadata.Name)
	}
	require.Equal(t, []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-resize", "pod-complete", "pod-delete"}, names)
}

func TestUpRefusesNegativeCapacity(t *testing.T) {
	_, err := Up(t.Context(), Config{Dir: t.TempDir(), NodeCPU: -1})
	require.ErrorContains(t, err, "NodeCPU -1")
}

func TestStopWithoutStateIsANoOp(t *testing.T) {
	require.NoError(t, Stop(t.Context(), t.TempDir()))
}

func TestCachedNotBuilt(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err := Cached(t.Context())
	require.ErrorIs(t, err, ErrNotBuilt)
	assert.Contains(t, err.Error(), "kubernetes-"+DefaultVersions().Kubernetes)
}

func TestFreshDir(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "a", "b")
	got, err := FreshDir(fresh)
	require.NoError(t, err)
	assert.DirExists(t, got)
	_, err = FreshDir(got) // still empty
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(got, "etcd"), nil, 0o644))
	_, err = FreshDir(got)
	assert.ErrorContains(t, err, "is not empty (etcd…)")
}
