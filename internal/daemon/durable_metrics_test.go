package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/podward/podward/internal/httplimit"
	"github.com/podward/podward/internal/httplimit/httplimittest"
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

func TestMetricsAddressClosesIdleConnections(t *testing.T) {
	lim := httplimit.Kubelet()
	lim.IdleTimeout = 50 * time.Millisecond
	c := dialMetrics(t, startLimited(t, lim))
	if code := httplimittest.Get(t, c, "/metrics", metricsTimeout); code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	httplimittest.AwaitClose(t, c, metricsTimeout)
}

func TestMetricsAddressCapsConnections(t *testing.T) {
	lim := httplimit.Kubelet()
	lim.MaxConns = 1
	addr := startLimited(t, lim)
	held := dialMetrics(t, addr)
	if code := httplimittest.Get(t, held, "/metrics", metricsTimeout); code != http.StatusOK {
		t.Fatalf("metrics: %d", code)
	}
	httplimittest.CapHolds(t, held, dialMetrics(t, addr), "/metrics", metricsTimeout)
}
