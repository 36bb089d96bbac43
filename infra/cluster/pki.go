package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// pki holds the paths of the control plane's keys and certificates, all
// generated locally under one directory and valid for ten years.
type pki struct {
	dir string
	// CA signs every certificate; the apiserver trusts it for clients.
	caCert, caKey string
	// Serving certificate of the apiserver (127.0.0.1, localhost and the
	// in-cluster names).
	serverCert, serverKey string
	// Service-account token signing key pair.
	saKey, saPub string
}

// client is a client certificate and key for one identity.
type client struct{ cert, key string }

// pkiAt is the layout of the PKI under dir (no file is read or written).
func pkiAt(dir string) *pki {
	return &pki{
		dir:    dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		serverCert: filepath.Join(dir, "apiserver.crt"), serverKey: filepath.Join(dir, "apiserver.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
}

// clientFiles are the certificate and key paths of client identity name.
func (p *pki) clientFiles(name string) client {
	return client{cert: filepath.Join(p.dir, name+".crt"), key: filepath.Join(p.dir, name+".key")}
}

// newPKI writes the CA, the serving certificate and the service-account keys
// under dir unless they exist (so a restarted cluster keeps its identity and
// existing kubeconfigs stay valid).
func newPKI(dir string) (*pki, error) {
	p := pkiAt(dir)
	if _, err := os.Stat(p.saPub); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: pki: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "aware-local-ca"},
		NotBefore:             now,
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("cluster: pki: CA: %w", err)
	}
	if err := writeCert(p.caCert, caDER); err != nil {
		return nil, err
	}
	if err := writeKey(p.caKey, caKey); err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := issue(p.serverCert, p.serverKey, serving, ca, caKey); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.saKey, saKey); err != nil {
		return nil, err
	}
	if err := writePEM(p.saPub, "PUBLIC KEY", pub, 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// client returns (creating on first use) a client certificate for user in
// the given groups (organisations).
func (p *pki) client(name, user string, groups ...string) (client, error) {
	c := p.clientFiles(name)
	if _, err := os.Stat(c.key); err == nil {
		return c, nil
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return client{}, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return c, issue(c.cert, c.key, tmpl, ca, caKey)
}

func (p *pki) loadCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(p.caCert)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: pki: %w", err)
	}
	keyPEM, err := os.ReadFile(p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: pki: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("cluster: pki: %s or %s is not PEM", p.caCert, p.caKey)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: pki: %s: %w", p.caCert, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: pki: %s: %w", p.caKey, err)
	}
	return ca, key, nil
}

// issue signs tmpl with the CA and writes the certificate and a new key.
func issue(certPath, keyPath string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.AddDate(10, 0, 0)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("cluster: pki: %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func writeCert(path string, der []byte) error { return writePEM(path, "CERTIFICATE", der, 0o644) }

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

// writePEM writes one PEM block atomically.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("cluster: pki: %w", err)
	}
	return nil
}
