package apiserver

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
	"github.com/podward/podward/internal/httplimit/httplimittest"
)

// serveLimited serves a shutdown-only server (GET /healthz) bounded by l
// on a unix socket until the test ends, and returns the socket's path.
func serveLimited(t *testing.T, l httplimit.Limits) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "podward.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewShutdownOnly(nil, slog.New(slog.DiscardHandler)).WithLimits(l).Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(testTimeout):
			t.Error("Serve did not return")
		}
	})
	return path
}

func dialUnix(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServeClosesIdleConnections(t *testing.T) {
	l := httplimit.Streaming()
	l.IdleTimeout = 50 * time.Millisecond
	c := dialUnix(t, serveLimited(t, l))
	if code := httplimittest.Get(t, c, "/healthz", testTimeout); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	httplimittest.AwaitClose(t, c, testTimeout)
}

func TestServeCapsConnections(t *testing.T) {
	l := httplimit.Streaming()
	l.MaxConns = 1
	path := serveLimited(t, l)
	held := dialUnix(t, path)
	if code := httplimittest.Get(t, held, "/healthz", testTimeout); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	httplimittest.CapHolds(t, held, dialUnix(t, path), "/healthz", testTimeout)
}

func TestServeDefaultLimitsKeepStreams(t *testing.T) {
	if l := New(nil, nil).limits; l != httplimit.Streaming() {
		t.Fatalf("limits %+v, want httplimit.Streaming()", l)
	}
}
