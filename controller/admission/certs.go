package admission

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certificate files in a cert directory (controller-runtime's names).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// certValidity is how long generated certificates are valid; they are
// regenerated when less than a third of it remains.
const certValidity = 365 * 24 * time.Hour

// EnsureCerts makes dir hold a CA and a serving certificate for hosts (DNS
// names or IP addresses), unless it already holds a valid pair for them,
// and returns the CA certificate in PEM (the webhook's caBundle).
func EnsureCerts(dir string, hosts []string, now time.Time) ([]byte, error) {
	if len(hosts) == 0 {
		return nil, errors.New("webhook certificate: no host names")
	}
	if ca, ok := currentCerts(dir, hosts, now); ok {
		return ca, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("webhook certificate: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "aware-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("webhook CA: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CAFile, caPEM, 0o644},
		{KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600},
		{CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644},
	}
	for _, f := range files {
		tmp := filepath.Join(dir, "."+f.name+".tmp")
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("webhook certificate: %w", err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			return nil, fmt.Errorf("webhook certificate: %w", err)
		}
	}
	return caPEM, nil
}

// currentCerts returns the CA of dir when its serving certificate is valid
// for every host for at least a third of its lifetime more.
func currentCerts(dir string, hosts []string, now time.Time) ([]byte, bool) {
	caPEM, err1 := os.ReadFile(filepath.Join(dir, CAFile))
	certPEM, err2 := os.ReadFile(filepath.Join(dir, CertFile))
	_, err3 := os.Stat(filepath.Join(dir, KeyFile))
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, false
	}
	b, _ := pem.Decode(certPEM)
	cb, _ := pem.Decode(caPEM)
	if b == nil || cb == nil {
		return nil, false
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil || now.Add(certValidity/3).After(cert.NotAfter) {
		return nil, false
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil || cert.CheckSignatureFrom(ca) != nil {
		return nil, false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return nil, false
		}
	}
	return bytes.Clone(caPEM), true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
