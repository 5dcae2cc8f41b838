package apiserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
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

// healthzOn sends a keep-alive GET /healthz on c and returns its status.
func healthzOn(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: podward\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
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
	if code := healthzOn(t, c); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
}

func TestServeCapsConnections(t *testing.T) {
	l := httplimit.Streaming()
	l.MaxConns = 1
	path := serveLimited(t, l)
	held := dialUnix(t, path)
	if code := healthzOn(t, held); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	next := dialUnix(t, path) // waits in the backlog
	if _, err := io.WriteString(next, "GET /healthz HTTP/1.1\r\nHost: podward\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = next.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := next.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection over the cap was served: %v", err)
	}
	_ = held.Close()
	_ = next.SetReadDeadline(time.Now().Add(testTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(next), nil)
	if err != nil {
		t.Fatalf("once the slot is free: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
}

func TestServeDefaultLimitsKeepStreams(t *testing.T) {
	if l := New(nil, nil).limits; l != httplimit.Streaming() {
		t.Fatalf("limits %+v, want httplimit.Streaming()", l)
	}
}
