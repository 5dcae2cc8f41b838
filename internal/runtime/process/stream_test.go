package process

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// syncBuffer is a bytes.Buffer safe for the copying goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExecStream: an interactive exec runs in the container's context with
// its stdout and stderr apart, reads the client's stdin to its end, and
// returns the command's exit code; with a terminal, the command has one
// (a pty of the size the client sent) and its output comes on stdout.
func TestExecStream(t *testing.T) {
	h := newHarness(t)
	wd := t.TempDir()
	c := shell("app", "echo ready; exec sleep 100")
	c.Env = []v1.EnvVar{{Name: "FOO", Value: "bar"}}
	c.WorkingDir = wd
	pod := newPod(t, c)
	h.prepare(pod)
	h.start(pod, 0)
	h.waitOutput("app", "ready")
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("pipes", func(t *testing.T) {
		var out, errOut syncBuffer
		code, err := h.r.ExecStream(ctx, pod, ref, []string{"sh", "-c", `echo "$FOO $(pwd)"; cat; echo oops >&2; exit 5`},
			runtime.ExecStreams{Stdin: strings.NewReader("from stdin\n"), Stdout: &out, Stderr: &errOut})
		if err != nil || code != 5 {
			t.Fatalf("ExecStream = %d, %v", code, err)
		}
		if want := "bar " + wd + "\nfrom stdin\n"; out.String() != want || errOut.String() != "oops\n" {
			t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errOut.String(), want, "oops\n")
		}
	})
	t.Run("tty", func(t *testing.T) {
		var out syncBuffer
		sizes := make(chan runtime.TerminalSize, 1)
		sizes <- runtime.TerminalSize{Width: 91, Height: 17}
		// The size comes asynchronously: the command waits for it.
		script := `while [ "$(stty size)" != "17 91" ]; do :; done; tty >/dev/null && echo on-a-tty; stty size; exit 4`
		code, err := h.r.ExecStream(ctx, pod, ref, []string{"sh", "-c", script},
			runtime.ExecStreams{Stdout: &out, TTY: true, Resize: sizes})
		if err != nil || code != 4 {
			t.Fatalf("ExecStream = %d, %v (output %q)", code, err, out.String())
		}
		if got := strings.ReplaceAll(out.String(), "\r\n", "\n"); got != "on-a-tty\n17 91\n" {
			t.Errorf("output %q", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		short, stop := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		defer pw.Close()
		out := signalWriter{wrote: make(chan struct{})}
		done := make(chan error, 1)
		go func() {
			_, err := h.r.ExecStream(short, pod, ref, []string{"sh", "-c", "echo started; cat"}, runtime.ExecStreams{Stdin: pr, Stdout: &out})
			done <- err
		}()
		// The command runs, and waits for stdin that never comes; the
		// client leaves.
		<-out.wrote
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("ExecStream after cancel = %v, want context.Canceled", err)
		}
	})
}

// TestPortForward: a port-forward reaches a server on the host's loopback
// (the pod's network on the process runtime) both ways, ends when the
// server closes its end, and a port nobody listens on is an error.
func TestPortForward(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("app", "exec sleep 100"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := int32(l.Addr().(*net.TCPAddr).Port)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		line, _ := bufio.NewReader(conn).ReadString('\n')
		_, _ = conn.Write([]byte("got " + line))
	}()
	client, server := net.Pipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { done <- h.r.PortForward(ctx, pod, port, server) }()
	if _, err := client.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "got ping\n" {
		t.Errorf("through the forward: %q, %v", got, err)
	}
	client.Close()
	if err := <-done; err != nil {
		t.Errorf("PortForward = %v", err)
	}

	l.Close()
	client, server = net.Pipe()
	defer client.Close()
	if err := h.r.PortForward(ctx, pod, port, server); err == nil || !strings.Contains(err.Error(), "connect to port") {
		t.Errorf("PortForward to a closed port = %v, want the dial's error", err)
	}
}

// signalWriter closes wrote at its first write.
type signalWriter struct {
	once  sync.Once
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.wrote) })
	return len(p), nil
}
