package manager

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/shard"
)

// inClusterNamespace is where a pod's service account names its
// namespace.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// newMembership builds this replica's shard membership; its client reads
// from the API server (a round's listing must see every Lease write that
// came before the round).
func newMembership(cfg Config, scheme *runtime.Scheme) (*shard.Membership, error) {
	sc := cfg.Shard
	if sc.Namespace == "" {
		b, err := os.ReadFile(inClusterNamespace)
		if err != nil {
			return nil, errors.New("controller: --shard needs --shard-namespace outside a cluster (the namespace of the replicas' Leases)")
		}
		sc.Namespace = strings.TrimSpace(string(b))
	}
	if sc.Identity == "" {
		sc.Identity = DefaultIdentity()
	}
	direct, err := client.New(cfg.REST, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("controller: shard client: %w", err)
	}
	opts := []shard.Option{shard.WithLogger(cfg.Log)}
	if sc.Group != "" {
		opts = append(opts, shard.WithGroup(sc.Group))
	}
	if sc.LeaseDuration != 0 {
		opts = append(opts, shard.WithLeaseDuration(sc.LeaseDuration))
	}
	m, err := shard.New(direct, sc.Namespace, sc.Identity, cfg.Step, opts...)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return m, nil
}

// DefaultIdentity is the host name made a DNS name, with a random suffix:
// a replica restarted on the same host is a new member and joins afresh.
func DefaultIdentity() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for _, r := range strings.ToLower(host) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = strings.Trim(name[:40], "-")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	if name == "" {
		name = "aware"
	}
	return "aware-shard-" + name + "-" + hex.EncodeToString(suffix)
}
