package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// authOK authenticates a request with "Authorization: Bearer ok" and
// answers 200 to every request.
func authOK(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "Bearer ok" {
		Authenticated(r.Context())
	}
	_, _ = io.WriteString(w, "ok\n")
}

// pooled serves authOK with MaxConns and MaxUnauthenticated.
func pooled(t *testing.T, maxConns, maxUnauth int) string {
	t.Helper()
	l := Streaming()
	l.MaxConns, l.MaxUnauthenticated = maxConns, maxUnauth
	return serve(t, l, http.HandlerFunc(authOK))
}

// dial opens a connection and sends a GET on it, authenticated or not,
// returning once it is answered: the server has accepted it and, for an
// authenticated one, moved it to its pool.
func dial(t *testing.T, addr string, auth bool) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if code := request(t, c, auth); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	return c
}

// request sends one keep-alive GET on c and returns its status.
func request(t *testing.T, c net.Conn, auth bool) int {
	t.Helper()
	req := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	if auth {
		req = "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\n\r\n"
	}
	if _, err := io.WriteString(c, req); err != nil {
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

// Connections that never authenticate hold only their own pool: with
// every place of MaxConns taken, by one authenticated client and three
// that are not, a new client is served (the oldest unauthenticated
// connection closed for it) and authenticates, where one pool of MaxConns
// would keep it waiting.
func TestUnauthenticatedDoNotLockOut(t *testing.T) {
	addr := pooled(t, 4, 2)
	held := dial(t, addr, true)
	idle := []net.Conn{dial(t, addr, false), dial(t, addr, false), dial(t, addr, false)}
	awaitClosed(t, idle[0]) // the third closed the oldest

	next := dial(t, addr, true)
	awaitClosed(t, idle[1])
	if code := request(t, idle[2], false); code != http.StatusOK {
		t.Fatalf("the newest unauthenticated connection: %d", code)
	}
	for _, c := range []net.Conn{held, next} {
		if code := request(t, c, true); code != http.StatusOK {
			t.Fatalf("an authenticated connection: %d", code)
		}
	}
}

// Authenticated connections keep their pool through a flood of
// unauthenticated ones; when their pool is full, one more authenticated
// connection stays in the unauthenticated pool, and is closed in its turn.
func TestAuthenticatedKeepTheirPool(t *testing.T) {
	addr := pooled(t, 4, 2)
	auth := []net.Conn{dial(t, addr, true), dial(t, addr, true)}
	extra := dial(t, addr, true) // the authenticated pool is full
	for range 10 {
		dial(t, addr, false)
	}
	awaitClosed(t, extra)
	for _, c := range auth {
		if code := request(t, c, true); code != http.StatusOK {
			t.Fatalf("an authenticated connection: %d", code)
		}
	}
}

// A connection that closes frees its place: the authenticated pool takes
// another again.
func TestClosedFreesItsPool(t *testing.T) {
	ln := &pipeListener{}
	p := newPools(ln, 3, 1)
	accept := func() *pooledConn {
		c, err := p.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c.(*pooledConn)
	}
	first := accept()
	first.promote()
	second := accept()
	second.promote()
	third := accept()
	third.promote() // the authenticated pool is full
	if third.state != unauthenticated {
		t.Fatalf("third: state %d with a full authenticated pool", third.state)
	}
	_ = first.Close()
	_ = first.Close() // idempotent
	third.promote()
	if third.state != authenticated || p.auth != 2 || p.unauth.Len() != 0 {
		t.Fatalf("after a close: third %d, %d authenticated, %d not", third.state, p.auth, p.unauth.Len())
	}
	fourth := accept()
	_ = accept() // closes fourth, the oldest unauthenticated
	if fourth.state != gone || p.unauth.Len() != 1 {
		t.Fatalf("fourth: state %d, %d unauthenticated", fourth.state, p.unauth.Len())
	}
	_ = fourth.Close() // evicted already: nothing to free
	if p.auth != 2 || p.unauth.Len() != 1 {
		t.Fatalf("after closing an evicted connection: %d authenticated, %d not", p.auth, p.unauth.Len())
	}
}

// pipeListener accepts one end of a new net.Pipe each time.
type pipeListener struct{ net.Listener }

func (*pipeListener) Accept() (net.Conn, error) {
	c, _ := net.Pipe()
	return c, nil
}
