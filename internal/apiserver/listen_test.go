package apiserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
)

func TestListenSocketMode(t *testing.T) {
	path := filepath.Join(shortDir(t), "run", "podward.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket mode = %v, want a socket with %v", fi.Mode(), SocketMode)
	}
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil || dir.Mode().Perm() != 0o755 {
		t.Fatalf("parent directory: %v %v", dir.Mode(), err)
	}
	if os.Geteuid() == 0 {
		if uid := fileOwner(fi); uid != 0 {
			t.Fatalf("socket owned by uid %d, want root", uid)
		}
	}
}

func TestListenRefusesASocketInUse(t *testing.T) {
	path := filepath.Join(shortDir(t), "podward.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Something must accept for the socket to count as in use.
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = Listen(path)
	if !errors.Is(err, ErrSocketInUse) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Listen: %v, want ErrSocketInUse naming the socket", err)
	}
	if _, statErr := os.Stat(path); statErr != nil {
		t.Fatalf("the live socket was removed: %v", statErr)
	}
}

func TestListenReplacesAStaleSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "podward.sock")
	// A socket left behind by an agent that died: nobody accepts on it.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	l, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l.Close()

	if err := os.WriteFile(path, []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
}

// Serve ends the streams and returns once its ctx is done.
func TestServeStopsWatchesAndReturns(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	agentCtx, stopAgent := context.WithCancel(context.Background())
	a := agent.New(agentCtx, agent.Config{Runtime: fake.New(clk), Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	defer func() { stopAgent(); a.Wait() }()

	path := filepath.Join(shortDir(t), "podward.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- New(a, slog.New(slog.DiscardHandler)).Serve(ctx, l) }()

	hc := unixClient(path)
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://podward/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return")
	}
	if b, err := io.ReadAll(resp.Body); len(b) != 0 || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
		t.Fatalf("the watch did not end cleanly: %q %v", b, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// Close removes the socket it published, never one that replaced it.
func TestCloseLeavesAReplacedSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "podward.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addr().String(); got != path {
		t.Errorf("Addr = %q, want the socket's path", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	l.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("Close removed the socket that replaced its own: %v", err)
	}
}
