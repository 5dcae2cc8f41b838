package httplimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// eventTimeout bounds every wait of these tests.
const eventTimeout = 10 * time.Second

// serve serves h with l on a loopback listener until the test ends.
func serve(t *testing.T, l Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	l.Apply(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

// get sends one keep-alive GET on c and reads its response.
func get(t *testing.T, c net.Conn) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(eventTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp
}

// awaitClosed waits (up to eventTimeout) for the peer of c to close it.
func awaitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(eventTimeout))
	_, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server kept the connection open")
	}
	if err == nil {
		t.Fatal("the server sent more bytes")
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	l := Streaming()
	l.IdleTimeout = 50 * time.Millisecond
	addr := serve(t, l, http.HandlerFunc(ok))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	get(t, c)
	awaitClosed(t, c)
}

func TestSilentConnectionIsClosed(t *testing.T) {
	l := Streaming()
	l.ReadHeaderTimeout = 50 * time.Millisecond
	addr := serve(t, l, http.HandlerFunc(ok))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	awaitClosed(t, c)
}

func TestCloseAfter(t *testing.T) {
	addr := serve(t, Streaming(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		CloseAfter(w)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp := get(t, c); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d", resp.StatusCode)
	}
	awaitClosed(t, c)
}

func TestMaxConns(t *testing.T) {
	l := Streaming()
	l.MaxConns = 2
	addr := serve(t, l, http.HandlerFunc(ok))
	held := make([]net.Conn, l.MaxConns)
	for i := range held {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		get(t, c) // accepted and served: the slot is taken
		held[i] = c
	}
	next, err := net.Dial("tcp", addr) // waits in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := io.WriteString(next, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = next.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := next.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection over the cap was served: %v", err)
	}
	_ = held[0].Close()
	_ = next.SetReadDeadline(time.Now().Add(eventTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(next), nil)
	if err != nil {
		t.Fatalf("once a slot is free: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestDefaults(t *testing.T) {
	k := Kubelet()
	if k.IdleTimeout != 90*time.Second || k.ReadTimeout != 4*time.Hour || k.WriteTimeout != 4*time.Hour || k.MaxHeaderBytes != 1<<20 {
		t.Fatalf("Kubelet() = %+v", k)
	}
	if s := Streaming(); s.ReadTimeout != 0 || s.WriteTimeout != 0 || s.IdleTimeout != k.IdleTimeout {
		t.Fatalf("Streaming() = %+v", s)
	}
}
