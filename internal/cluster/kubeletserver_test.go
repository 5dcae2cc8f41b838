package cluster

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/crilog"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// clientCert is a client certificate for cn signed by the CA.
func (ca *testCA) clientCert(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"kubeadm:cluster-admins"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fakeLogs is a LogSource and LogEnds over log files the test writes.
type fakeLogs struct {
	dir string

	mu    sync.Mutex
	calls []string
	// ended has the channel LogEnded returns for a path; a path without
	// one never ends.
	ended map[string]chan struct{}
	// watching gets the ctx of each LogEnded call.
	watching chan context.Context
}

func newFakeLogs(t *testing.T) *fakeLogs {
	return &fakeLogs{dir: t.TempDir(), ended: map[string]chan struct{}{}, watching: make(chan context.Context, 10)}
}

// LogPath knows pod default/web, with containers app (restarted once) and
// sidecar (never restarted).
func (l *fakeLogs) LogPath(ns, name, container string, previous bool) (string, error) {
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf("%s/%s/%s previous=%v", ns, name, container, previous))
	l.mu.Unlock()
	if ns != "default" || name != "web" {
		return "", fmt.Errorf("%w: pods %q", agent.ErrNotFound, name)
	}
	attempt := 1
	switch {
	case container == "sidecar" && previous:
		return "", agent.BadRequestf("previous terminated container %q in pod %q not found", container, name)
	case container == "sidecar":
		attempt = 0
	case container != "app":
		return "", agent.BadRequestf("container %s is not valid for pod %s", container, name)
	case previous:
		attempt = 0
	}
	return filepath.Join(l.dir, fmt.Sprintf("%s-%d.log", container, attempt)), nil
}

func (l *fakeLogs) LogEnded(ctx context.Context, ns, name, container, path string) <-chan struct{} {
	l.watching <- ctx
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended[path]
}

func (l *fakeLogs) lastCall() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return ""
	}
	return l.calls[len(l.calls)-1]
}

var logT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type logRecord struct {
	sec     int
	stream  string
	content string
	partial bool
}

// appendLog appends records to the log file at path.
func appendLog(t *testing.T, path string, recs ...logRecord) {
	t.Helper()
	var b []byte
	for _, r := range recs {
		b = crilog.AppendRecord(b, crilog.Record{Time: logT0.Add(time.Duration(r.sec) * time.Second), Stream: r.stream, Partial: r.partial, Content: []byte(r.content)})
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

type kubeletFixture struct {
	logs     *fakeLogs
	ca       *testCA
	url      string
	serverCA *x509.CertPool
	certDir  string
	// stop stops the server and waits for Serve to return.
	stop func()
}

// startKubeletServer serves with a self-signed certificate for 127.0.0.1
// until the test ends, authorizing every authenticated client (the tests of
// authorization set it). change, when set, adjusts the configuration.
func startKubeletServer(t *testing.T, change func(*KubeletServerConfig)) *kubeletFixture {
	t.Helper()
	f := &kubeletFixture{logs: newFakeLogs(t), ca: newTestCA(t, "kubernetes"), certDir: filepath.Join(t.TempDir(), "pki")}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, f.ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := KubeletServerConfig{
		Logs:         f.logs,
		CertDir:      f.certDir,
		NodeName:     "worker-1",
		Addresses:    []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: "worker-1"}},
		ClientCAFile: caFile,
		Clock:        clocktesting.NewFakePassiveClock(logT0.Add(time.Minute)),
		Logger:       slog.New(slog.DiscardHandler),
	}
	cfg.Authorization = AuthorizationAlwaysAllow
	if change != nil {
		change(&cfg)
	}
	s, err := NewKubeletServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(eventTimeout):
				t.Error("Serve did not return after its ctx ended")
			}
		})
	}
	t.Cleanup(f.stop)
	f.url = "https://" + ln.Addr().String()
	f.serverCA = x509.NewCertPool()
	f.serverCA.AddCert(s.TLSConfig().Certificates[0].Leaf)
	return f
}

// client is an HTTPS client that trusts the server's certificate and
// presents certs.
func (f *kubeletFixture) client(t *testing.T, certs ...tls.Certificate) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.serverCA, Certificates: certs}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// apiServer is the client the API server is: its kubelet client
// certificate signed by the cluster CA.
func (f *kubeletFixture) apiServer(t *testing.T) *http.Client {
	return f.client(t, f.ca.clientCert(t, "kube-apiserver-kubelet-client"))
}

func kubeletGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestKubeletServerServesLogs(t *testing.T) {
	f := startKubeletServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"),
		logRecord{0, crilog.Stdout, "one", false},
		logRecord{10, crilog.Stderr, "two", false},
		logRecord{20, crilog.Stdout, "thr", true},
		logRecord{21, crilog.Stdout, "ee", false},
		logRecord{50, crilog.Stdout, "four", false},
	)
	appendLog(t, filepath.Join(f.logs.dir, "app-0.log"), logRecord{0, crilog.Stdout, "before the restart", false})
	c := f.apiServer(t)

	tests := []struct {
		name, query, want string
	}{
		{"all", "", "one\ntwo\nthree\nfour\n"},
		{"timestamps", "?timestamps=true", "2026-01-01T00:00:00.000000000Z one\n2026-01-01T00:00:10.000000000Z two\n2026-01-01T00:00:20.000000000Z three\n2026-01-01T00:00:50.000000000Z four\n"},
		{"tailLines", "?tailLines=2", "three\nfour\n"},
		{"tailLines=0", "?tailLines=0", ""},
		{"legacy tail", "?tail=1", "four\n"},
		{"legacy tail=all", "?tail=all", "one\ntwo\nthree\nfour\n"},
		{"limitBytes", "?limitBytes=6", "one\ntw"},
		{"limitBytes on a line's end", "?limitBytes=8", "one\ntwo\n"},
		{"sinceTime", "?sinceTime=2026-01-01T00:00:10Z", "two\nthree\nfour\n"},
		// now is 00:01:00
		{"sinceSeconds", "?sinceSeconds=30", "four\n"},
		{"stream Stderr", "?stream=Stderr", "two\n"},
		{"stream Stdout with tail", "?stream=Stdout&tailLines=2", "three\nfour\n"},
		{"stream All", "?stream=All&tailLines=1", "four\n"},
		{"previous", "?previous=true", "before the restart\n"},
		{"previous follow", "?previous=true&follow=true", "before the restart\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := kubeletGet(t, c, f.url+"/containerLogs/default/web/app"+tc.query)
			if code != http.StatusOK || body != tc.want {
				t.Errorf("got %d %q, want 200 %q", code, body, tc.want)
			}
		})
	}
	code, _ := kubeletGet(t, c, f.url+"/containerLogs/default/web/app?previous=1")
	if code != http.StatusOK || f.logs.lastCall() != "default/web/app previous=true" {
		t.Errorf("previous: %d, LogPath called as %s", code, f.logs.lastCall())
	}
}

func TestKubeletServerRefusals(t *testing.T) {
	f := startKubeletServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "one", false})
	c := f.apiServer(t)
	tests := []struct {
		name, path string
		code       int
		body       string
	}{
		{"unknown pod", "/containerLogs/default/nope/app", 404, `pod "nope" does not exist`},
		{"unknown namespace", "/containerLogs/kube-system/web/app", 404, `pod "web" does not exist`},
		{"unknown container", "/containerLogs/default/web/db", 400, "container db is not valid for pod web"},
		{"no previous instance", "/containerLogs/default/web/sidecar?previous=true", 400, `previous terminated container "sidecar" in pod "web" not found`},
		{"no log yet", "/containerLogs/default/web/sidecar", 400, `container "sidecar" in pod "web" has no log yet`},
		{"negative tailLines", "/containerLogs/default/web/app?tailLines=-1", 422, "invalid request: tailLines: must be greater than or equal to 0"},
		{"zero limitBytes", "/containerLogs/default/web/app?limitBytes=0", 422, "invalid request: limitBytes: must be greater than 0"},
		{"both since", "/containerLogs/default/web/app?sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z", 422, "invalid request: at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"not a number", "/containerLogs/default/web/app?tailLines=ten", 400, `{"message": "Unable to decode query."}`},
		{"not a bool", "/containerLogs/default/web/app?follow=sure", 400, `{"message": "Unable to decode query."}`},
		{"bad stream", "/containerLogs/default/web/app?stream=stdout", 400, `invalid stream type "stdout"`},
		{"unknown path", "/exec/default/web/app", 404, "404 page not found"},
		{"too short", "/containerLogs/default/web", 404, "404 page not found"},
		{"healthz", "/healthz", 200, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := kubeletGet(t, c, f.url+tc.path)
			if code != tc.code || strings.TrimSuffix(body, "\n") != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
		})
	}
}

func TestKubeletServerFollow(t *testing.T) {
	f := startKubeletServer(t, nil)
	path := filepath.Join(f.logs.dir, "app-1.log")
	appendLog(t, path, logRecord{0, crilog.Stdout, "one", false}, logRecord{1, crilog.Stdout, "two", false})
	c := f.apiServer(t)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/containerLogs/default/web/app?follow=true&tailLines=1&timestamps=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var watchCtx context.Context
	select {
	case watchCtx = <-f.logs.watching:
	case <-time.After(eventTimeout):
		t.Fatal("the server did not ask when the log ends")
	}
	lines := readLogLines(resp.Body)
	expect := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || l != want {
				t.Fatalf("read %q (%v), want %q", l, ok, want)
			}
		case <-time.After(eventTimeout):
			t.Fatalf("timed out waiting for %q", want)
		}
	}
	expect("2026-01-01T00:00:01.000000000Z two")
	// Written after the request: streamed as it comes.
	appendLog(t, path, logRecord{2, crilog.Stderr, "three", false})
	expect("2026-01-01T00:00:02.000000000Z three")
	appendLog(t, path, logRecord{3, crilog.Stdout, "fo", true}, logRecord{4, crilog.Stdout, "ur", false})
	expect("2026-01-01T00:00:03.000000000Z four")

	// The client goes away: the server stops following.
	cancel()
	select {
	case <-watchCtx.Done():
	case <-time.After(eventTimeout):
		t.Fatal("the request's ctx did not end when the client left")
	}
}

func TestKubeletServerFollowEndsWithTheInstance(t *testing.T) {
	f := startKubeletServer(t, nil)
	path := filepath.Join(f.logs.dir, "app-1.log")
	appendLog(t, path, logRecord{0, crilog.Stdout, "one", false})
	ended := make(chan struct{})
	f.logs.mu.Lock()
	f.logs.ended[path] = ended
	f.logs.mu.Unlock()
	c := f.apiServer(t)

	resp, err := c.Get(f.url + "/containerLogs/default/web/app?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := readLogLines(resp.Body)
	if l := <-lines; l != "one" {
		t.Fatalf("read %q", l)
	}
	// The container writes its last line, exits and its log is closed.
	appendLog(t, path, logRecord{1, crilog.Stdout, "last", false})
	close(ended)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if fmt.Sprint(rest) != "[last]" {
		t.Errorf("then read %q, want the last line and the end", rest)
	}
}

func TestKubeletServerStopEndsStreams(t *testing.T) {
	f := startKubeletServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "one", false})
	resp, err := f.apiServer(t).Get(f.url + "/containerLogs/default/web/app?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := readLogLines(resp.Body)
	if l := <-lines; l != "one" {
		t.Fatalf("read %q", l)
	}
	f.stop() // fails the test if Serve waits for the stream
	for range lines {
	}
}

// readLogLines sends the lines of r, without their newline, until its end.
func readLogLines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func TestKubeletServerAuthentication(t *testing.T) {
	f := startKubeletServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "secret", false})
	url := f.url + "/containerLogs/default/web/app"

	t.Run("no certificate", func(t *testing.T) {
		code, body := kubeletGet(t, f.client(t), url)
		if code != http.StatusUnauthorized || body != "Unauthorized\n" {
			t.Errorf("got %d %q, want 401", code, body)
		}
		if code, _ := kubeletGet(t, f.client(t), f.url+"/healthz"); code != http.StatusUnauthorized {
			t.Errorf("healthz without a certificate: %d, want 401", code)
		}
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		other := newTestCA(t, "someone-else")
		cert := other.clientCert(t, "kube-apiserver-kubelet-client")
		// Go's client sends no certificate the server's CAs did not
		// sign...
		if code, _ := kubeletGet(t, f.client(t, cert), url); code != http.StatusUnauthorized {
			t.Errorf("got %d, want 401", code)
		}
		// ...others may: the handshake fails then.
		tr := &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs:              f.serverCA,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got %d, want a failed handshake", resp.StatusCode)
		}
		if !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate") {
			t.Errorf("error %v, want a TLS one", err)
		}
	})
	t.Run("certificate of the cluster CA", func(t *testing.T) {
		code, body := kubeletGet(t, f.client(t, f.ca.clientCert(t, "alice")), url)
		if code != http.StatusOK || body != "secret\n" {
			t.Errorf("got %d %q", code, body)
		}
	})
}

func TestKubeletServerAnonymous(t *testing.T) {
	if _, err := NewKubeletServer(KubeletServerConfig{Logs: newFakeLogs(t), CertDir: t.TempDir(), NodeName: "n"}); err == nil {
		t.Fatal("started without a client CA nor AllowAnonymous")
	}
	f := startKubeletServer(t, func(c *KubeletServerConfig) {
		c.ClientCAFile = ""
		c.AllowAnonymous = true
	})
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "open", false})
	code, body := kubeletGet(t, f.client(t), f.url+"/containerLogs/default/web/app")
	if code != http.StatusOK || body != "open\n" {
		t.Errorf("got %d %q", code, body)
	}
}

func TestKubeletServerSelfSignedCertificateIsKept(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	cfg := KubeletServerConfig{
		Logs:           newFakeLogs(t),
		CertDir:        dir,
		NodeName:       "worker-1",
		Addresses:      []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.7"}, {Type: v1.NodeHostName, Address: "worker-1.lab"}},
		AllowAnonymous: true,
		Authorization:  AuthorizationAlwaysAllow,
		Clock:          clocktesting.NewFakePassiveClock(now),
		Logger:         slog.New(slog.DiscardHandler),
	}
	leaf := func(cfg KubeletServerConfig) *x509.Certificate {
		t.Helper()
		s, err := NewKubeletServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s.TLSConfig().Certificates[0].Leaf
	}
	first := leaf(cfg)
	if fmt.Sprint(first.DNSNames) != "[worker-1 worker-1.lab]" || len(first.IPAddresses) != 1 || !first.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")) {
		t.Errorf("SANs = %v %v", first.DNSNames, first.IPAddresses)
	}
	if _, ok := first.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("key is %T, want ECDSA", first.PublicKey)
	}
	if fi, err := os.Stat(filepath.Join(dir, "kubelet.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v", fi, err)
	}
	// A restart serves the same certificate.
	if again := leaf(cfg); !again.Equal(first) {
		t.Error("a restart made a new certificate")
	}
	// A new address: a new certificate naming it.
	cfg.Addresses = append(cfg.Addresses, v1.NodeAddress{Type: v1.NodeExternalIP, Address: "192.0.2.1"})
	renamed := leaf(cfg)
	if renamed.Equal(first) || len(renamed.IPAddresses) != 2 {
		t.Errorf("after an address change: IPs %v", renamed.IPAddresses)
	}
	// Close to its end: a new one.
	cfg.Clock = clocktesting.NewFakePassiveClock(renamed.NotAfter.Add(-time.Hour))
	if renewed := leaf(cfg); renewed.Equal(renamed) {
		t.Error("an expiring certificate was kept")
	}
}

func TestKubeletServerCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := selfSigned("given", []string{"given.example"}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := errors.Join(os.WriteFile(certFile, certPEM, 0o644), os.WriteFile(keyFile, keyPEM, 0o600)); err != nil {
		t.Fatal(err)
	}
	s, err := NewKubeletServer(KubeletServerConfig{Logs: newFakeLogs(t), TLSCertFile: certFile, TLSPrivateKeyFile: keyFile, AllowAnonymous: true, Authorization: AuthorizationAlwaysAllow})
	if err != nil {
		t.Fatal(err)
	}
	if names := s.TLSConfig().Certificates[0].Leaf.DNSNames; fmt.Sprint(names) != "[given.example]" {
		t.Errorf("serving %v", names)
	}
	if _, err := NewKubeletServer(KubeletServerConfig{Logs: newFakeLogs(t), TLSCertFile: certFile, AllowAnonymous: true, Authorization: AuthorizationAlwaysAllow}); err == nil {
		t.Error("accepted a certificate without its key")
	}
	if s.Addr() != ":10250" {
		t.Errorf("Addr = %s, want :10250", s.Addr())
	}
}
