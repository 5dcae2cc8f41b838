package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
)

// dial opens a TLS connection to f presenting certs.
func (f *kubeletFixture) dial(t *testing.T, certs ...tls.Certificate) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(f.url, "https://"), &tls.Config{RootCAs: f.serverCA, Certificates: certs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// getOn sends a keep-alive GET of path on c and returns its status.
func getOn(t *testing.T, c *tls.Conn, path string) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: kubelet\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(eventTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// awaitServerClose waits up to eventTimeout for the server to close c.
func awaitServerClose(t *testing.T, c *tls.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(eventTimeout))
	n, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server kept the connection open")
	}
	if err == nil {
		t.Fatalf("the server sent %d more bytes", n)
	}
}

func shortLimits() httplimit.Limits {
	l := httplimit.Kubelet()
	l.IdleTimeout = 50 * time.Millisecond
	return l
}

func TestKubeletServerClosesIdleConnections(t *testing.T) {
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Limits = shortLimits() })
	c := f.dial(t, f.ca.clientCert(t, "alice"))
	if code := getOn(t, c, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	awaitServerClose(t, c)
}

func TestKubeletServerClosesAfter401(t *testing.T) {
	f := startKubeletServer(t, nil) // the kubelet's 90 s idle timeout
	c := f.dial(t)
	if code := getOn(t, c, "/healthz"); code != http.StatusUnauthorized {
		t.Fatalf("healthz without a certificate: %d, want 401", code)
	}
	awaitServerClose(t, c)
}

func TestKubeletServerCapsConnections(t *testing.T) {
	l := httplimit.Kubelet()
	l.MaxConns = 2
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Limits = l })
	alice := f.ca.clientCert(t, "alice")
	held := []*tls.Conn{f.dial(t, alice), f.dial(t, alice)}
	for _, c := range held {
		if code := getOn(t, c, "/healthz"); code != http.StatusOK {
			t.Fatalf("healthz: %d", code)
		}
	}
	// The third connection waits: not even its handshake is answered.
	errc := make(chan error, 1)
	go func() {
		resp, err := f.client(t, alice).Get(f.url + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = errors.New(resp.Status)
			}
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("served over the cap: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	_ = held[0].Close()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("once a slot is free: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatal("not served once a slot was free")
	}
}
