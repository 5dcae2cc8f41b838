package cli

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
)

// runCLI runs `podward ARGS...` in this process.
func runCLI(ctx context.Context, args ...string) result {
	out, errb := newBuffer(), newBuffer()
	code := execute(ctx, Streams{In: strings.NewReader(""), Out: out, Err: errb}, args...)
	return result{out: out.String(), err: errb.String(), code: code}
}

// hangUpServer accepts on a socket and closes every connection at once,
// as a server that crashes on each request would.
func hangUpServer(t *testing.T) string {
	t.Helper()
	socket := filepath.Join(shortDir(t), "hangup.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return socket
}

// A server that hangs up is said to, never as "context canceled"
// (TestNoAgent has the missing and the refused socket).
func TestHangUpIsSaid(t *testing.T) {
	hangup := hangUpServer(t)
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte(webPod), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "The podward agent at " + hangup + " hung up before answering "
	for _, args := range [][]string{
		{"get", "pods"},
		{"get", "pods", "web"},
		{"get", "pods", "-w"},
		{"apply", "-f", file},
		{"logs", "web"},
		{"delete", "pod", "web"},
		{"events", "-w"},
	} {
		r := runCLI(context.Background(), append([]string{"--socket", hangup}, args...)...)
		if r.code != 1 || !strings.HasPrefix(r.err, want) || strings.Count(r.err, "\n") != 1 || r.out != "" {
			t.Errorf("podward %s:\n%s\nwant one line starting with %q", strings.Join(args, " "), r, want)
		}
	}
}

// A caller's own end (Ctrl-C, --timeout) is still said as such.
func TestCanceledCallSaysSo(t *testing.T) {
	hangup := hangUpServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := runCLI(ctx, "--socket", hangup, "get", "pods")
	if r.code != 1 || !strings.Contains(r.err, "context canceled") {
		t.Fatalf("get pods with a canceled context:\n%s", r)
	}
}

// The per-user socket directory ($TMPDIR/podward-<uid>, the default
// without XDG_RUNTIME_DIR) must be the user's own, mode 0700, and not a
// symbolic link: serve and every client refuse it otherwise, naming the
// directory, what is wrong with it and what to do. With no directory,
// serve creates it 0700.
func TestUnsafeSocketDirIsRefused(t *testing.T) {
	base := shortDir(t)
	t.Setenv("TMPDIR", base)
	t.Setenv("XDG_RUNTIME_DIR", "")
	dir := filepath.Join(base, "podward-"+strconv.Itoa(os.Geteuid()))
	socket := filepath.Join(dir, "podward.sock")
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		plant  func() error
		want   string
		asRoot bool
	}{
		{
			name: "owned by another user",
			plant: func() error {
				if err := os.Mkdir(dir, 0o700); err != nil {
					return err
				}
				return os.Chown(dir, 65534, 65534)
			},
			want:   "is owned by uid 65534",
			asRoot: true,
		},
		{
			name: "open to others",
			plant: func() error {
				if err := os.Mkdir(dir, 0o700); err != nil {
					return err
				}
				return os.Chmod(dir, 0o755)
			},
			want: "has mode 0755",
		},
		{
			name:  "a symbolic link",
			plant: func() error { return os.Symlink(elsewhere, dir) },
			want:  "is a symbolic link",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asRoot && os.Geteuid() != 0 {
				t.Skip("needs root to give the directory to another user")
			}
			if err := tc.plant(); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)

			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			out, errb := newBuffer(), newBuffer()
			done := make(chan int, 1)
			go func() {
				done <- execute(ctx, Streams{In: strings.NewReader(""), Out: out, Err: errb},
					"serve", "--socket", socket, "--root", filepath.Join(base, "state"))
			}()
			served := make(chan struct{})
			go func() {
				defer close(served)
				deadline := time.NewTimer(waitLimit)
				defer deadline.Stop()
				for !strings.Contains(errb.String(), "agent serving on") {
					errb.mu.Lock()
					changed := errb.changed
					errb.mu.Unlock()
					select {
					case <-changed:
					case <-deadline.C:
						return
					case <-ctx.Done():
						return
					}
				}
			}()
			select {
			case code := <-done:
				stop()
				<-served
				if code != 1 || !strings.Contains(errb.String(), dir) || !strings.Contains(errb.String(), tc.want) {
					t.Errorf("serve: exit code %d, stderr:\n%s\nwant it to name %s and say %q", code, errb.String(), dir, tc.want)
				}
			case <-served:
				stop()
				<-done
				t.Errorf("serve used the socket directory:\n%s", errb.String())
			}

			r := runCLI(context.Background(), "--socket", socket, "get", "pods")
			if r.code != 1 || !strings.Contains(r.err, dir) || !strings.Contains(r.err, tc.want) {
				t.Errorf("get pods:\n%s\nwant it to name %s and say %q", r, dir, tc.want)
			}
		})
	}

	// Without the directory, serve creates it, the user's, mode 0700.
	ctx, stop := context.WithCancel(context.Background())
	out, errb := newBuffer(), newBuffer()
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, Streams{In: strings.NewReader(""), Out: out, Err: errb},
			"serve", "--socket", socket, "--root", filepath.Join(base, "state"))
	}()
	defer func() {
		stop()
		<-done
	}()
	errb.waitFor(t, "podward: agent serving on "+socket)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the socket directory: %v %v, want a directory with mode 0700", fi.Mode(), err)
	}
	if r := runCLI(context.Background(), "--socket", socket, "get", "pods"); r.code != 0 || r.err != "No resources found in default namespace.\n" {
		t.Fatalf("get pods:\n%s", r)
	}
	if _, err := os.Stat(socket); errors.Is(err, os.ErrNotExist) {
		t.Fatal("no socket")
	}
}
