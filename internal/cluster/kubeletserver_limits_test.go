package cluster

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
	"github.com/podward/podward/internal/httplimit/httplimittest"
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

func shortLimits() httplimit.Limits {
	l := httplimit.Kubelet()
	l.IdleTimeout = 50 * time.Millisecond
	return l
}

func TestKubeletServerClosesIdleConnections(t *testing.T) {
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Limits = shortLimits() })
	c := f.dial(t, f.ca.clientCert(t, "alice"))
	if code := httplimittest.Get(t, c, "/healthz", eventTimeout); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	httplimittest.AwaitClose(t, c, eventTimeout)
}

func TestKubeletServerClosesAfter401(t *testing.T) {
	f := startKubeletServer(t, nil) // the kubelet's 90 s idle timeout
	c := f.dial(t)
	if code := httplimittest.Get(t, c, "/healthz", eventTimeout); code != http.StatusUnauthorized {
		t.Fatalf("healthz without a certificate: %d, want 401", code)
	}
	httplimittest.AwaitClose(t, c, eventTimeout)
}

func TestKubeletServerCapsConnections(t *testing.T) {
	l := httplimit.Kubelet()
	l.MaxConns = 2
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Limits = l })
	alice := f.ca.clientCert(t, "alice")
	held := []*tls.Conn{f.dial(t, alice), f.dial(t, alice)}
	for _, c := range held {
		if code := httplimittest.Get(t, c, "/healthz", eventTimeout); code != http.StatusOK {
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

// Clients without credentials hold only their own part of the connections
// (httplimit's MaxUnauthenticated, by default a quarter): with every
// connection taken, by one client with a certificate and three without,
// the oldest without is closed for the next client, who is served.
func TestKubeletServerUnauthenticatedPool(t *testing.T) {
	if l := (&KubeletServer{}).limits(); l.MaxUnauthenticated != httplimit.DefaultMaxUnauthenticated || l.MaxConns != httplimit.DefaultMaxConns {
		t.Fatalf("default limits %+v", l)
	}
	l := httplimit.Kubelet()
	l.MaxConns, l.MaxUnauthenticated = 4, 2
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Limits = l })
	alice := f.ca.clientCert(t, "alice")
	held := f.dial(t, alice)
	if code := httplimittest.Get(t, held, "/healthz", eventTimeout); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	idle := []*tls.Conn{f.dial(t), f.dial(t), f.dial(t)} // handshaken: accepted
	httplimittest.AwaitClose(t, idle[0], eventTimeout)

	next := f.dial(t, alice)
	if code := httplimittest.Get(t, next, "/healthz", eventTimeout); code != http.StatusOK {
		t.Fatalf("a new client with a certificate: %d", code)
	}
	httplimittest.AwaitClose(t, idle[1], eventTimeout)
	if code := httplimittest.Get(t, held, "/healthz", eventTimeout); code != http.StatusOK {
		t.Fatalf("the first client again: %d", code)
	}
}
