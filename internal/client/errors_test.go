package client_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/sockdir"
)

// rawServer accepts on a socket in dir and hands each connection to
// handle, which owns it. It stops at the test's end.
func rawServer(t *testing.T, dir string, handle func(net.Conn)) (socket string, accepted func() int) {
	t.Helper()
	socket = filepath.Join(dir, "raw.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		n  int
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			wg.Go(func() { handle(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return socket, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// A server that closes the connection before answering hung up: said so,
// for a call and for a stream, and not as the call's own context.
func TestHangUp(t *testing.T) {
	socket, _ := rawServer(t, shortDir(t), func(c net.Conn) { c.Close() })
	c := client.New(socket)
	defer c.Close()
	ctx := context.Background()
	calls := map[string]func() error{
		"list":  func() error { _, err := c.ListPods(ctx, "", client.ListOptions{}); return err },
		"apply": func() error { _, _, err := c.ApplyPod(ctx, pod("web", "sleep")); return err },
		"watch": func() error { _, err := c.WatchPods(ctx, "", client.ListOptions{}); return err },
		"logs":  func() error { _, err := c.Logs(ctx, "default", "web", v1.PodLogOptions{}); return err },
	}
	for name, call := range calls {
		err := call()
		var ce *client.ConnError
		if !errors.As(err, &ce) || ce.Reason != client.HungUp || ce.Socket != socket ||
			!strings.HasPrefix(err.Error(), "The podward agent at "+socket+" hung up before answering ") ||
			errors.Is(err, context.Canceled) || errors.Is(err, client.ErrNoAgent) {
			t.Errorf("%s: %v, want a HungUp ConnError", name, err)
		}
	}
}

// An agent that accepts and never answers times out with the client's
// timeout, said so; the caller's own end is the caller's error.
func TestNoAnswer(t *testing.T) {
	release := make(chan struct{})
	socket, _ := rawServer(t, shortDir(t), func(c net.Conn) {
		<-release
		c.Close()
	})
	defer close(release)
	c := client.New(socket)
	defer c.Close()
	client.SetTimeout(c, 50*time.Millisecond)
	_, err := c.GetPod(context.Background(), "default", "web")
	var ce *client.ConnError
	if !errors.As(err, &ce) || ce.Reason != client.TimedOut ||
		err.Error() != "The podward agent at "+socket+" did not answer GET /api/v1/namespaces/default/pods/web within 50ms" {
		t.Errorf("get: %v, want a TimedOut ConnError", err)
	}

	client.SetTimeout(c, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.GetPod(ctx, "default", "web")
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ce) {
		t.Errorf("get with the caller's deadline: %v, want the caller's context error", err)
	}
}

// The client refuses a per-user socket directory that is not the user's
// private one, before it connects: whoever listens there hears nothing.
func TestUnsafeDirIsNotConnected(t *testing.T) {
	base := shortDir(t)
	t.Setenv("TMPDIR", base)
	dir := filepath.Join(base, "podward-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	socket, accepted := rawServer(t, dir, func(c net.Conn) { c.Close() })
	// Not the default: DefaultSocket is the root socket for root.
	c := client.New(socket)
	defer c.Close()

	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := c.ListPods(context.Background(), "", client.ListOptions{})
	var ce *client.ConnError
	if !errors.As(err, &ce) || ce.Reason != client.UnsafeDir || !errors.Is(err, sockdir.ErrUnsafe) ||
		!strings.HasPrefix(err.Error(), "Refusing to connect to the podward agent at "+socket+": socket directory "+dir+" has mode 0777") {
		t.Errorf("list through an open directory: %v, want an UnsafeDir ConnError", err)
	}
	if n := accepted(); n != 0 {
		t.Errorf("the server accepted %d connections", n)
	}

	// Private again: the client connects (and this server hangs up).
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPods(context.Background(), "", client.ListOptions{}); !errors.As(err, &ce) || ce.Reason != client.HungUp {
		t.Errorf("list through the private directory: %v, want the server's hang-up", err)
	}
}

func TestConnReasonString(t *testing.T) {
	if got := client.HungUp.String(); got != "HungUp" {
		t.Errorf("HungUp.String() = %q", got)
	}
	if got := client.ConnReason(42).String(); got != "ConnReason(42)" {
		t.Errorf("unknown reason: %q", got)
	}
}
