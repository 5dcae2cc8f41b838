// Package httplimittest checks, from a client's side, the limits
// internal/httplimit puts on a server's connections: one keep-alive
// request on a raw connection, the server closing an idle one, and a
// connection over the cap left unanswered until a slot frees. The
// servers' own tests (the agent's socket, the metrics address, the kubelet
// port) share it.
package httplimittest

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

// Unserved is how long a connection over the cap is watched for an answer
// it must not get: there is no event to wait on for something that does
// not happen, so this is a bounded look, not a wait.
const Unserved = 100 * time.Millisecond

// Get sends a keep-alive GET of path on c and returns its status, reading
// the answer for at most within.
func Get(t testing.TB, c net.Conn, path string, within time.Duration) int {
	t.Helper()
	send(t, c, path)
	return read(t, c, within)
}

func send(t testing.TB, c net.Conn, path string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: podward\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, c net.Conn, within time.Duration) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// AwaitClose fails unless the server closes c within.
func AwaitClose(t testing.TB, c net.Conn, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	n, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server kept the connection open")
	}
	if err == nil {
		t.Fatalf("the server sent %d more bytes", n)
	}
}

// CapHolds checks a server whose every slot is taken, held among them: a
// GET of path on next (a connection beyond the cap, waiting in the
// listener's backlog) is not answered; once held is closed, it is answered
// 200 within.
func CapHolds(t testing.TB, held, next net.Conn, path string, within time.Duration) {
	t.Helper()
	send(t, next, path)
	_ = next.SetReadDeadline(time.Now().Add(Unserved))
	if _, err := next.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection over the cap was served: %v", err)
	}
	_ = held.Close()
	if code := read(t, next, within); code != http.StatusOK {
		t.Fatalf("once a slot is free: %d, want 200", code)
	}
}
