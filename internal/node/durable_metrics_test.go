package node

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
)

// metricsTimeout bounds the waits of the metrics address's tests.
const metricsTimeout = 10 * time.Second

// startLimited serves a 200 with lim as the metrics address does, until
// the test ends, and returns its address.
func startLimited(t *testing.T, lim httplimit.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	done := serveLimited(ctx, ln, h, lim, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(metricsTimeout):
			t.Error("the metrics server did not stop")
		}
	})
	return ln.Addr().String()
}

func dialMetrics(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// askMetrics sends a keep-alive GET on c and returns its status.
func askMetrics(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(metricsTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestMetricsAddressClosesIdleConnections(t *testing.T) {
	lim := httplimit.Kubelet()
	lim.IdleTimeout = 50 * time.Millisecond
	c := dialMetrics(t, startLimited(t, lim))
	if code := askMetrics(t, c); code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	_ = c.SetReadDeadline(time.Now().Add(metricsTimeout))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
}

func TestMetricsAddressCapsConnections(t *testing.T) {
	lim := httplimit.Kubelet()
	lim.MaxConns = 1
	addr := startLimited(t, lim)
	held := dialMetrics(t, addr)
	if code := askMetrics(t, held); code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	next := dialMetrics(t, addr) // waits in the backlog
	if _, err := io.WriteString(next, "GET /metrics HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = next.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := next.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection over the cap was served: %v", err)
	}
	_ = held.Close()
	_ = next.SetReadDeadline(time.Now().Add(metricsTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(next), nil)
	if err != nil {
		t.Fatalf("once the slot is free: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
}
