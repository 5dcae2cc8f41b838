package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// selfSignedValidity is how long a self-signed serving certificate is valid
// (the kubelet's is valid a year too); an expired one is made again at the
// next start.
const selfSignedValidity = 365 * 24 * time.Hour

// servingCert loads the configured certificate, or the self-signed one of
// CertDir, made (again) when missing, expired or not naming the node.
func (s *KubeletServer) servingCert() (tls.Certificate, error) {
	cfg := s.cfg
	switch {
	case cfg.TLSCertFile != "" && cfg.TLSPrivateKeyFile != "":
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSPrivateKeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
		return cert, nil
	case cfg.TLSCertFile != "" || cfg.TLSPrivateKeyFile != "":
		return tls.Certificate{}, errors.New("serving certificate: give both the certificate and its key, or neither")
	case cfg.CertDir == "":
		return tls.Certificate{}, errors.New("serving certificate: no certificate files and no directory to keep a self-signed one in")
	}
	dns, ips := certNames(cfg.NodeName, cfg.Addresses)
	certPath := filepath.Join(cfg.CertDir, SelfSignedCertFile)
	keyPath := filepath.Join(cfg.CertDir, SelfSignedKeyFile)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	switch {
	case err == nil && covers(cert.Leaf, dns, ips, s.cfg.Clock.Now()):
		return cert, nil
	case err == nil:
		s.log.Info("the self-signed serving certificate expired or does not name this node; making a new one", "cert", certPath)
	case !errors.Is(err, fs.ErrNotExist):
		s.log.Warn("cannot load the self-signed serving certificate; making a new one", "cert", certPath, "err", err)
	}
	certPEM, keyPEM, err := selfSigned(cfg.NodeName, dns, ips, s.cfg.Clock.Now())
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	// The key first: a certificate without its key is never left behind.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	s.log.Info("made a self-signed serving certificate", "cert", certPath, "dns", dns, "ips", ips)
	return tls.X509KeyPair(certPEM, keyPEM)
}

// certNames are the names a serving certificate must have: the node name
// and the addresses (IPs as IP SANs, host names as DNS SANs).
func certNames(nodeName string, addrs []v1.NodeAddress) (dns []string, ips []net.IP) {
	add := func(name string) {
		if name == "" {
			return
		}
		if ip := net.ParseIP(name); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			return
		}
		if !slices.Contains(dns, name) {
			dns = append(dns, name)
		}
	}
	add(nodeName)
	for _, a := range addrs {
		add(a.Address)
	}
	return dns, ips
}

// covers reports whether cert is valid at now and for a while yet, and
// names all of dns and ips.
func covers(cert *x509.Certificate, dns []string, ips []net.IP, now time.Time) bool {
	if cert == nil || now.Before(cert.NotBefore) || now.Add(24*time.Hour).After(cert.NotAfter) {
		return false
	}
	for _, name := range dns {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// selfSigned makes a self-signed ECDSA P-256 serving certificate for the
// names, PEM-encoded with its key. It is its own CA, so that a client can
// trust it (the API server's --kubelet-certificate-authority) by itself.
func selfSigned(nodeName string, dns []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The kubelet names its self-signed certificate <host>@<unix time>.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", nodeName, now.Unix())},
		NotBefore:             now.Add(-time.Hour), // some clock skew
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// writeFileAtomic writes b to path through a temporary file renamed over
// it, so that a crash leaves the old file or the new one.
func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, there is nothing left to remove
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
