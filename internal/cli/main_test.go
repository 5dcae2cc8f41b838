package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/objects/local"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/process"
)

func TestMain(m *testing.M) {
	// Containers run under shims that are this very binary.
	process.MaybeRunInit()
	// Without this, each shim built with -race waits a second at exit.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	// serve's signal.NotifyContext starts the signal loop, once per process.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("os/signal.loop"))
}

// waitLimit bounds every wait of these tests.
const waitLimit = 60 * time.Second

// buffer is a concurrency-safe output stream a test can wait on.
type buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newBuffer() *buffer { return &buffer{changed: make(chan struct{})} }

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output contains s.
func (b *buffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		has, changed := strings.Contains(b.buf.String(), s), b.changed
		b.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("output never contained %q; it is:\n%s", s, b.String())
		}
	}
}

// result is what a command printed and its exit code.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// shortDir is a temporary directory with a path short enough for a unix
// socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pwcli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// env is a real agent (process runtime, real processes) serving the API
// on a temporary socket in this process.
type env struct {
	t      *testing.T
	socket string
	agent  *agent.Agent
	dir    string // scratch space for the containers' commands
}

func newEnv(t *testing.T) *env {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	// PODWARD_TEST_LOG=1 shows what the agent and the runtime do.
	if os.Getenv("PODWARD_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rt, err := process.New(process.Config{Root: t.TempDir(), Clock: clock.RealClock{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := planner.DefaultConfig()
	// A crash-looping container stays in CrashLoopBackOff after its first
	// (immediate) restart.
	cfg.BackoffBase = time.Hour
	agentCtx, stopAgent := context.WithCancel(context.Background())
	a := agent.New(agentCtx, agent.Config{Runtime: rt, Clock: clock.RealClock{}, Planner: cfg, Logger: log})

	dir := shortDir(t)
	e := &env{t: t, socket: filepath.Join(dir, "pw.sock"), agent: a, dir: dir}
	ln, err := apiserver.Listen(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServing := context.WithCancel(context.Background())
	served := make(chan error, 1)
	objs, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { served <- apiserver.New(a, log).WithObjects(objs).Serve(serveCtx, ln) }()

	t.Cleanup(func() {
		e.killAll()
		stopServing()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		stopAgent()
		a.Wait()
		_ = rt.Close()
	})
	return e
}

// killAll deletes every pod with grace period 0 and waits until each has
// terminated (its containers are gone), so that no container outlives the
// test.
func (e *env) killAll() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	zero := int64(0)
	for {
		var live []types.UID
		for _, p := range e.agent.ListPods("") {
			if e.agent.Workers().CouldHaveRunningContainers(p.UID) {
				live = append(live, p.UID)
				_, _ = e.agent.DeletePod(p.Namespace, p.Name, &zero)
			}
		}
		if len(live) == 0 {
			return
		}
		for _, uid := range live {
			if err := e.agent.WaitTerminated(ctx, uid); err != nil && ctx.Err() != nil {
				e.t.Errorf("pod %s still running at the end of the test", uid)
				return
			}
		}
	}
}

// run runs a command against the agent and returns what it printed.
func (e *env) run(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	out, errb := newBuffer(), newBuffer()
	code := execute(ctx, Streams{In: strings.NewReader(""), Out: out, Err: errb}, append([]string{"--socket", e.socket}, args...)...)
	return result{out: out.String(), err: errb.String(), code: code}
}

// ok runs a command that must succeed.
func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("podward %s:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// background runs a command until stop is called; stop waits for it and
// returns its result.
type background struct {
	out, err *buffer
	cancel   context.CancelFunc
	done     chan int
}

func (e *env) start(args ...string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{out: newBuffer(), err: newBuffer(), cancel: cancel, done: make(chan int, 1)}
	go func() {
		b.done <- execute(ctx, Streams{In: strings.NewReader(""), Out: b.out, Err: b.err}, append([]string{"--socket", e.socket}, args...)...)
	}()
	e.t.Cleanup(cancel)
	return b
}

// wait waits for the command to end by itself.
func (b *background) wait(t *testing.T) result {
	t.Helper()
	select {
	case code := <-b.done:
		return result{out: b.out.String(), err: b.err.String(), code: code}
	case <-time.After(waitLimit):
		t.Fatalf("the command did not end; output:\n%s\n%s", b.out.String(), b.err.String())
		return result{}
	}
}

// stop interrupts the command and waits for it.
func (b *background) stop(t *testing.T) result {
	t.Helper()
	b.cancel()
	return b.wait(t)
}

// manifest writes a manifest file.
func (e *env) manifest(name, content string) string {
	e.t.Helper()
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// makeStaleSocket leaves a socket file nobody accepts on, as an agent that
// died does.
func makeStaleSocket(path string) error {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	l.SetUnlinkOnClose(false)
	return l.Close()
}
