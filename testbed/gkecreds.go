package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// gcpCredentials reports where the gcp provider will find Google Cloud
// credentials, or an error saying how to provide them: the provider's own
// variables, Application Default Credentials (a file named by
// GOOGLE_APPLICATION_CREDENTIALS, or gcloud's), or a GCE metadata server.
func gcpCredentials(ctx context.Context, getenv func(string) string, home string, resolver *net.Resolver) (string, error) {
	for _, v := range []string{"GOOGLE_CREDENTIALS", "GOOGLE_CLOUD_KEYFILE_JSON", "GCLOUD_KEYFILE_JSON", "GOOGLE_OAUTH_ACCESS_TOKEN"} {
		if getenv(v) != "" {
			return "$" + v, nil
		}
	}
	if p := getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("GOOGLE_APPLICATION_CREDENTIALS names %s: %w", p, err)
		}
		return p, nil
	}
	dir := getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		dir = filepath.Join(home, ".config", "gcloud")
	}
	adc := filepath.Join(dir, "application_default_credentials.json")
	if _, err := os.Stat(adc); err == nil {
		return adc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if addrs, err := resolver.LookupHost(ctx, "metadata.google.internal"); err == nil && len(addrs) > 0 {
		return "the GCE metadata server", nil
	}
	return "", errors.New("no Google Cloud credentials for the gke target: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key (or GOOGLE_CREDENTIALS to its contents)")
}

// gkePreflight checks what the gke target needs on this machine before
// anything is made: Google Cloud credentials for the gcp provider, and
// gke-gcloud-auth-plugin for the Kubernetes provider to reach the cluster.
func gkePreflight(ctx context.Context, out io.Writer) error {
	home, _ := os.UserHomeDir()
	from, err := gcpCredentials(ctx, os.Getenv, home, net.DefaultResolver)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	fmt.Fprintf(out, "gke: Google Cloud credentials from %s\n", from)
	if _, err := exec.LookPath("gke-gcloud-auth-plugin"); err != nil {
		return errors.New("testbed: the gke target's kubeconfig authenticates through gke-gcloud-auth-plugin, which is not on $PATH: gcloud components install gke-gcloud-auth-plugin")
	}
	return nil
}
