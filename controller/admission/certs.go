package admission

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Certificate files in a cert directory (controller-runtime's names, and
// the CA's key, kept so that serving certificates are renewed under the
// same CA).
const (
	CertFile  = "tls.crt"
	KeyFile   = "tls.key"
	CAFile    = "ca.crt"
	CAKeyFile = "ca.key"
)

// Validity of generated certificates; each is renewed when less than a
// third of its validity remains.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
)

// EnsureCerts makes dir hold a CA and a serving certificate for hosts (DNS
// names or IP addresses), keeping what is still valid (see planCerts), and
// returns the CA bundle in PEM for the webhook's configuration.
func EnsureCerts(dir string, hosts []string, now time.Time) ([]byte, error) {
	p, err := planCerts(dir, hosts, now)
	if err != nil {
		return nil, err
	}
	if err := p.write(dir); err != nil {
		return nil, err
	}
	return p.bundle, nil
}

// certPlan is what dir should hold: the files to write (none if nothing
// changes) and the CA bundle the API server must trust.
type certPlan struct {
	files  map[string][]byte
	bundle []byte
}

func (p certPlan) changed() bool { return len(p.files) > 0 }

// planCerts reads dir and decides: its CA is kept while its key is there
// and more than a third of its validity remains, else a new CA is made;
// its serving certificate is kept while it is for every host, signed by
// that CA and more than a third of its validity remains, else a new one is
// issued. When the CA changes the bundle holds the new CA and the old one
// (while valid), so that the API server, given the bundle first, trusts
// the serving certificate before and after the files change.
func planCerts(dir string, hosts []string, now time.Time) (certPlan, error) {
	if len(hosts) == 0 {
		return certPlan{}, errors.New("webhook certificate: no host names")
	}
	p := certPlan{files: map[string][]byte{}}
	caPEM, _ := os.ReadFile(filepath.Join(dir, CAFile))
	ca, caKey := readCA(dir, now)
	if ca == nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return p, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: "aware-webhook-ca"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caValidity),
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return p, fmt.Errorf("webhook CA: %w", err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return p, err
		}
		ca, _ = x509.ParseCertificate(der)
		caKey = key
		newPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		p.files[CAFile] = newPEM
		p.files[CAKeyFile] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		p.bundle = append(bytes.Clone(newPEM), stillValid(caPEM, now)...)
	} else {
		p.bundle = bytes.Clone(caPEM)
	}
	if servingValid(dir, hosts, ca, now) {
		return p, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return p, fmt.Errorf("webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return p, err
	}
	p.files[KeyFile] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	p.files[CertFile] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return p, nil
}

// write writes the plan's files, each atomically; the serving key before
// its certificate (a certificate watcher that reads between the two sees
// a mismatched pair, refuses it and keeps the old one until the next).
func (p certPlan) write(dir string) error {
	if !p.changed() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	for _, name := range []string{CAKeyFile, CAFile, KeyFile, CertFile} {
		data, ok := p.files[name]
		if !ok {
			continue
		}
		mode := os.FileMode(0o644)
		if name == KeyFile || name == CAKeyFile {
			mode = 0o600
		}
		if err := atomicfile.Write(filepath.Join(dir, name), data, mode); err != nil {
			return fmt.Errorf("webhook certificate: %w", err)
		}
	}
	return nil
}

// readCA returns dir's CA and its key when both are there and more than a
// third of the CA's validity remains.
func readCA(dir string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	certPEM, err1 := os.ReadFile(filepath.Join(dir, CAFile))
	keyPEM, err2 := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err1 != nil || err2 != nil {
		return nil, nil
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil || !ca.IsCA || now.Add(caValidity/3).After(ca.NotAfter) {
		return nil, nil
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil || !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil
	}
	return ca, key
}

// servingValid reports whether dir's serving certificate is for every
// host, signed by ca, and valid for more than a third of its validity.
func servingValid(dir string, hosts []string, ca *x509.Certificate, now time.Time) bool {
	certPEM, err1 := os.ReadFile(filepath.Join(dir, CertFile))
	_, err2 := os.Stat(filepath.Join(dir, KeyFile))
	if err1 != nil || err2 != nil {
		return false
	}
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return false
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil || now.Add(certValidity/3).After(cert.NotAfter) || cert.CheckSignatureFrom(ca) != nil {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// stillValid returns the certificates of the PEM bundle that are valid at
// now, in PEM.
func stillValid(bundle []byte, now time.Time) []byte {
	var out []byte
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && now.Before(c.NotAfter) {
			out = append(out, pem.EncodeToMemory(b)...)
		}
	}
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// Rotator renews the webhook's certificates while the controller runs: at
// every check (hourly by default) it plans as EnsureCerts does and, when
// something is due, first publishes the new CA bundle (Publish: the
// webhook configuration's caBundle) and then writes the files, which the
// webhook server's certificate watcher loads. A controller that runs for
// years keeps serving with valid certificates, and the API server trusts
// every serving certificate it may see during the change.
type Rotator struct {
	Dir     string
	Hosts   []string
	Every   time.Duration
	Now     func() time.Time
	Publish func(ctx context.Context, caBundle []byte) error
	Log     *slog.Logger
}

// NeedLeaderElection: every replica serves the webhook with its own files.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start checks every r.Every until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	every := r.Every
	if every <= 0 {
		every = time.Hour
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := r.Check(ctx); err != nil && r.Log != nil {
			r.Log.Warn("webhook certificate not rotated; retrying at the next check", "err", err)
		}
	}
}

// Check renews what is due: bundle first, then files.
func (r *Rotator) Check(ctx context.Context) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	p, err := planCerts(r.Dir, r.Hosts, now())
	if err != nil || !p.changed() {
		return err
	}
	if err := r.Publish(ctx, p.bundle); err != nil {
		return fmt.Errorf("webhook certificate: publish the CA bundle: %w", err)
	}
	if err := p.write(r.Dir); err != nil {
		return err
	}
	if r.Log != nil {
		_, newCA := p.files[CAFile]
		r.Log.Info("webhook certificate rotated", "dir", r.Dir, "newCA", newCA)
	}
	return nil
}
