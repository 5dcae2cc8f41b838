package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// nobody is the unprivileged user these tests run podward as.
const nobody = 65534

// asNobody prepares podward to run as uid/gid nobody: a copy of the binary
// it may execute (the suite's build directory is root's alone), and a
// scratch directory every user may write into, with /tmp's mode, to be
// its $TMPDIR. It skips the test unless it runs as root.
func asNobody(t *testing.T) (bin, tmp string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run podward as another user")
	}
	pub, err := os.MkdirTemp("", "pwsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(pub); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("nobody cannot reach %s (%v): set TMPDIR to a directory every user can traverse", pub, err)
		}
		if d == "/" {
			break
		}
	}
	bin = filepath.Join(pub, "podward")
	if err := os.Link(podwardBin, bin); err != nil {
		t.Fatal(err)
	}
	tmp = filepath.Join(pub, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	return bin, tmp
}

// nobodyCmd is `bin ARGS...` as nobody, with $TMPDIR tmp and none of
// $XDG_RUNTIME_DIR or $PODWARD_SOCKET: the default socket is then
// $TMPDIR/podward-65534/podward.sock.
func nobodyCmd(ctx context.Context, bin, tmp string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runNobody runs `bin ARGS...` as nobody to its end and returns its
// stderr and exit code.
func runNobody(t *testing.T, bin, tmp string, args ...string) (stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := nobodyCmd(ctx, bin, tmp, args...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return errb.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("podward %s: %v", strings.Join(args, " "), err)
	}
	return errb.String(), 0
}

// spy listens on socket and counts the connections it receives: a user
// who planted it would read what each sends.
func spy(t *testing.T, socket string) (connections func() int) {
	t.Helper()
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(socket, 0o777); err != nil {
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
			c.Close()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// A user without $XDG_RUNTIME_DIR gets the socket directory
// $TMPDIR/podward-<uid>, which anyone can create first. One that another
// user created, with a server listening in it, makes `serve` refuse to
// start and a client refuse to connect, both naming the directory and its
// owner; the planted server hears nothing. Without it, serve creates the
// directory, the user's and mode 0700, and the client reaches the agent.
func TestNonRootDefaultSocketDirectory(t *testing.T) {
	bin, tmp := asNobody(t)
	dir := filepath.Join(tmp, "podward-65534")
	state := filepath.Join(tmp, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, nobody, nobody); err != nil {
		t.Fatal(err)
	}

	// Another user (root, here) got there first, and listens.
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	connections := spy(t, filepath.Join(dir, "podward.sock"))
	stderr, code := runNobody(t, bin, tmp, "serve", "--root", state)
	if code != 1 || !strings.Contains(stderr, "socket directory "+dir+" is owned by uid 0 (root), not by you (uid 65534") {
		t.Errorf("serve in another user's socket directory: exit code %d, stderr:\n%s", code, stderr)
	}
	stderr, code = runNobody(t, bin, tmp, "get", "pods")
	if code != 1 || !strings.HasPrefix(stderr, "Refusing to connect to the podward agent at "+dir+"/podward.sock: socket directory "+dir+" is owned by uid 0 (root)") {
		t.Errorf("get pods through another user's socket directory: exit code %d, stderr:\n%s", code, stderr)
	}
	if n := connections(); n != 0 {
		t.Errorf("the planted server received %d connections", n)
	}

	// Without it, serve makes the directory itself.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := nobodyCmd(ctx, bin, tmp, "serve", "--root", state)
	serve.Cancel = func() error { return serve.Process.Signal(syscall.SIGTERM) }
	out, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var log strings.Builder
	var logMu sync.Mutex
	read := make(chan struct{})
	go func() {
		defer close(read)
		served := false
		bintest.ScanLines(out, io.Discard, func(line string) {
			logMu.Lock()
			log.WriteString(line + "\n")
			logMu.Unlock()
			if !served && strings.HasPrefix(line, agentReadyLine+dir+"/podward.sock") {
				served = true
				close(ready)
			}
		})
	}()
	defer func() {
		cancel()
		<-read
		_ = serve.Wait()
	}()
	timer := time.NewTimer(lineTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-read:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("serve as nobody ended before it served:\n%s", log.String())
	case <-timer.C:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("serve as nobody did not serve within %v:\n%s", lineTimeout, log.String())
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != nobody {
		t.Errorf("the socket directory serve made: %v %v, want nobody's, mode 0700", fi.Mode(), err)
	}
	if stderr, code := runNobody(t, bin, tmp, "get", "pods"); code != 0 || stderr != "No resources found in default namespace.\n" {
		t.Errorf("get pods from nobody's agent: exit code %d, stderr:\n%s", code, stderr)
	}
}

// A user the socket does not let in is told so, with the socket's mode
// and owner, not "context canceled".
func TestPermissionDeniedOnTheSocket(t *testing.T) {
	bin, tmp := asNobody(t)
	dir := filepath.Join(tmp, "root-agent")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "podward.sock")
	connections := spy(t, socket)
	if err := os.Chmod(socket, 0o660); err != nil {
		t.Fatal(err)
	}
	stderr, code := runNobody(t, bin, tmp, "--socket", socket, "get", "pods")
	want := "Unable to connect to the podward agent at " + socket + ": permission denied (the socket is Srw-rw----, owned by uid 0 (root), gid 0 (root)) - run as its owner or a member of its group\n"
	if code != 1 || stderr != want {
		t.Errorf("get pods as nobody: exit code %d\nstderr %q\nwant   %q", code, stderr, want)
	}
	if n := connections(); n != 0 {
		t.Errorf("the server received %d connections", n)
	}
}
