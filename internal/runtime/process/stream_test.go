package process

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
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

// signalWriter closes wrote at its first write.
type signalWriter struct {
	once  sync.Once
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.wrote) })
	return len(p), nil
}

// waitBuffer is a syncBuffer that tells when it grows.
type waitBuffer struct {
	syncBuffer
	grew chan struct{}
}

func newWaitBuffer() *waitBuffer { return &waitBuffer{grew: make(chan struct{}, 1)} }

func (w *waitBuffer) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	select {
	case w.grew <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor waits until the buffer holds s.
func (w *waitBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.grew:
		case <-deadline:
			t.Fatalf("no %q within %v in %q", s, waitLimit, w.String())
		}
	}
}

// TestAttachStream: a container with stdin and a tty runs sh on a pty its
// shim holds. An attach types a command and sees its output, leaves
// without stopping the shell, and attaches from a new Runtime on the same
// root (an agent that restarted) reach the same shell.
func TestAttachStream(t *testing.T) {
	root := t.TempDir()
	h := newHarnessAt(t, root)
	pod := newPod(t, v1.Container{Name: "sh", Command: []string{"sh"}, Stdin: true, TTY: true})
	ref := model.ContainerRef{Name: "sh", Role: model.RoleMain}
	h.prepare(pod)
	c := h.start(pod, 0)
	attach := func(r *Runtime, input, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pr, pw := io.Pipe()
		defer pw.Close()
		out := newWaitBuffer()
		sizes := make(chan runtime.TerminalSize, 1)
		sizes <- runtime.TerminalSize{Width: 77, Height: 19}
		done := make(chan error, 1)
		go func() {
			done <- r.AttachStream(ctx, pod, ref, runtime.ExecStreams{Stdin: pr, Stdout: out, TTY: true, Resize: sizes})
		}()
		if _, err := pw.Write([]byte(input)); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, want)
		cancel() // the client leaves
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("AttachStream after the client left = %v, want context.Canceled", err)
		}
	}
	// The output differs from the typed line the tty echoes.
	attach(h.r, "V=kept; echo x$((1000+1))y\n", "x1001y")
	attach(h.r, `while [ "$(stty size)" != "19 77" ]; do :; done; echo "[$V] $(stty size)"`+"\n", "[kept] 19 77")
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	h2 := newHarnessAt(t, root)
	attach(h2.r, "echo \"again [$V]\"\n", "again [kept]")
	// And the shell still reads its terminal: exit ends it.
	if err := h2.r.AttachStream(context.Background(), pod, ref, runtime.ExecStreams{Stdin: strings.NewReader("exit 3\n"), Stdout: io.Discard, TTY: true}); err != nil {
		t.Errorf("AttachStream until the shell exits = %v", err)
	}
	if ev := h2.waitExit(c.ID); ev.Exit.ExitCode != 3 {
		t.Errorf("exit %+v, want code 3", ev.Exit)
	}
	logged := strings.Join(logLines(t, h2.r.LogPath(pod.UID, "sh", 0)), "\n")
	if !strings.Contains(logged, "x1001y") {
		t.Errorf("the pty's output is not in the log: %q", logged)
	}
}

// TestAttachStdinOnce: with stdinOnce the container's stdin (a pipe) is
// closed once the first attach's stdin ended, as Kubernetes does
// (ContainerConfig.stdin_once in the CRI's api.proto), so that cat ends.
func TestAttachStdinOnce(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, v1.Container{Name: "cat", Command: []string{"cat"}, Stdin: true, StdinOnce: true})
	ref := model.ContainerRef{Name: "cat", Role: model.RoleMain}
	h.prepare(pod)
	c := h.start(pod, 0)
	out := newWaitBuffer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.r.AttachStream(ctx, pod, ref, runtime.ExecStreams{Stdin: strings.NewReader("once\n"), Stdout: out, Stderr: io.Discard}); err != nil {
		t.Errorf("AttachStream = %v", err)
	}
	if out.String() != "once\n" {
		t.Errorf("attached output %q", out.String())
	}
	if ev := h.waitExit(c.ID); ev.Exit.ExitCode != 0 {
		t.Errorf("exit %+v, want 0 (cat read its end)", ev.Exit)
	}
}

// TestTTYContainerKilled: a container on a pty whose shell ignores SIGTERM
// (an interactive bash) ends at SIGKILL, and its shim with it.
func TestTTYContainerKilled(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, v1.Container{Name: "sh", Command: []string{"bash", "--norc", "--noprofile"}, Stdin: true, TTY: true})
	h.prepare(pod)
	c := h.start(pod, 0)
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ev := h.waitExit(c.ID); ev.Exit.ExitCode != 137 {
		t.Errorf("exit %+v, want 137", ev.Exit)
	}
}
