package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

func TestMain(m *testing.M) {
	MaybeRunInit()
	// The shims are this binary, with the race detector when the tests
	// have it: without this, each would wait a second before it exits.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if os.Getenv(testAgentEnv) != "" {
		os.Exit(runTestAgent())
	}
	if os.Getenv(pdeathsigEnv) != "" {
		os.Exit(printPdeathsig())
	}
	if addr := os.Getenv(testListenEnv); addr != "" {
		os.Exit(runTestListener(addr))
	}
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait of a test; nothing here should take long.
const waitLimit = 30 * time.Second

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type outputLine struct {
	pod, container, stream, line string
}

// harness is a runtime under test with a fake clock, recording the Output
// callback and the events it reported.
type harness struct {
	t   *testing.T
	r   *Runtime
	clk *testingclock.FakeClock

	mu      sync.Mutex
	output  []outputLine
	changed chan struct{} // rung when output grows

	events map[string]runtime.Event // by instance ID; only the test goroutine uses it
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessAt(t, t.TempDir())
}

// newHarnessAt is newHarness on a given root, as an agent that restarts
// uses it again.
func newHarnessAt(t *testing.T, root string) *harness {
	t.Helper()
	return newHarnessWith(t, Config{Root: root})
}

// newHarnessWith is newHarness with cfg, whose Clock and Output it sets.
func newHarnessWith(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     testingclock.NewFakeClock(epoch),
		changed: make(chan struct{}, 1),
		events:  make(map[string]runtime.Event),
	}
	cfg.Clock, cfg.Output = h.clk, h.record
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	t.Cleanup(func() { _ = r.Close() })
	return h
}

func (h *harness) record(pod *model.Pod, container, stream string, line []byte) {
	h.mu.Lock()
	h.output = append(h.output, outputLine{pod.Name, container, stream, string(line)})
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// waitOutput waits until container wrote a line containing substr and
// returns that line.
func (h *harness) waitOutput(container, substr string) string {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		h.mu.Lock()
		for _, l := range h.output {
			if l.container == container && strings.Contains(l.line, substr) {
				h.mu.Unlock()
				return l.line
			}
		}
		h.mu.Unlock()
		select {
		case <-h.changed:
		case <-deadline:
			h.t.Fatalf("container %s wrote no line with %q within %v", container, substr, waitLimit)
		}
	}
}

// waitExit waits for the exit event of instance id.
func (h *harness) waitExit(id string) runtime.Event {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		if ev, ok := h.events[id]; ok {
			return ev
		}
		select {
		case ev := <-h.r.Events():
			if _, dup := h.events[ev.ID]; dup {
				h.t.Errorf("second exit event for %s", ev.ID)
			}
			h.events[ev.ID] = ev
		case <-deadline:
			h.t.Fatalf("no exit event for %s within %v", id, waitLimit)
		}
	}
}

// start starts the index-th regular container of pod, attempt 0.
func (h *harness) start(pod *model.Pod, index int) runtime.Container {
	h.t.Helper()
	ref := model.ContainerRef{Name: pod.Spec.Containers[index].Name, Role: model.RoleMain, Index: index}
	c, err := h.r.StartContainer(context.Background(), pod, ref, 0)
	if err != nil {
		h.t.Fatalf("StartContainer(%s): %v", ref.Name, err)
	}
	return c
}

// run prepares pod, starts its index-th container and waits for its exit.
func (h *harness) run(pod *model.Pod, index int) (runtime.Container, runtime.Event) {
	h.t.Helper()
	c := h.start(pod, index)
	return c, h.waitExit(c.ID)
}

func (h *harness) prepare(pod *model.Pod) {
	h.t.Helper()
	if err := h.r.PreparePod(context.Background(), pod); err != nil {
		h.t.Fatalf("PreparePod: %v", err)
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func newPod(t *testing.T, containers ...v1.Container) *model.Pod {
	return &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web",
			Namespace: "default",
			UID:       types.UID("uid-" + randomSuffix(t)),
		},
		// Default: ClusterFirst without a cluster DNS would warn of the
		// fallback (MissingClusterDNS) in every test.
		Spec: v1.PodSpec{Containers: containers, DNSPolicy: v1.DNSDefault},
	}}
}

func shell(name, script string) v1.Container {
	return v1.Container{Name: name, Command: []string{"/bin/sh", "-c", script}}
}

// testsBegan is before anything a test started; the shims stamp times
// with the real clock.
var testsBegan = time.Now()

// logLines reads a CRI log whole, as "stream content" lines.
func logLines(t *testing.T, path string) []string {
	t.Helper()
	var lines []string
	err := crilog.ReadLog(context.Background(), path, crilog.ReadOptions{Tail: crilog.AllLines}, func(l crilog.Line) error {
		if l.Time.Before(testsBegan) || l.Time.After(time.Now()) {
			t.Errorf("log line %q stamped %v, not during the test", l.Content, l.Time)
		}
		lines = append(lines, l.Stream+" "+string(l.Content))
		return nil
	})
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	return lines
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for private mount namespaces")
	}
}

// processGone waits until pid no longer runs (it may be a zombie nobody
// reaped yet) and says whether that happened within waitLimit. A signal
// takes effect asynchronously, so a process that was just killed may still
// be on its way out.
func processGone(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	// A pidfd becomes readable when its process exits.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(waitLimit.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd: %v", err)
		}
		return n > 0
	}
}

func TestExitCodes(t *testing.T) {
	tests := map[string]struct {
		script     string
		wantCode   int32
		wantReason runtime.ExitReason
	}{
		"success": {"exit 0", 0, runtime.ReasonCompleted},
		"failure": {"exit 3", 3, runtime.ReasonError},
		// Kubernetes' expansion turns "$$" into "$", hence "$$$$" for the
		// shell's "$$".
		"killed with SIGTERM": {"kill -TERM $$$$", 143, runtime.ReasonError},
		"killed with SIGKILL": {"kill -KILL $$$$", 137, runtime.ReasonError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			pod := newPod(t, shell("main", tc.script))
			h.prepare(pod)
			before := time.Now()
			c, ev := h.run(pod, 0)
			after := time.Now()
			if ev.Exit.ExitCode != tc.wantCode || ev.Exit.Reason != tc.wantReason {
				t.Errorf("exit %d %s, want %d %s; log %q", ev.Exit.ExitCode, ev.Exit.Reason, tc.wantCode, tc.wantReason, logLines(t, c.LogPath))
			}
			if ev.PodUID != pod.UID || ev.Container != "main" || ev.ID != c.ID {
				t.Errorf("event %+v does not name pod %s container main instance %s", ev, pod.UID, c.ID)
			}
			// The shim stamps them with the real clock.
			if c.StartedAt.Before(before) || ev.Exit.FinishedAt.Before(c.StartedAt) || after.Before(ev.Exit.FinishedAt) {
				t.Errorf("StartedAt %v FinishedAt %v, want them in order between %v and %v", c.StartedAt, ev.Exit.FinishedAt, before, after)
			}
		})
	}
}

func TestSignal(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", "echo ready; exec sleep 100"))
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("main", "ready")
	signalled := time.Now()
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := h.waitExit(c.ID)
	if ev.Exit.ExitCode != 143 || ev.Exit.Reason != runtime.ReasonError {
		t.Errorf("exit %d %s, want 143 Error", ev.Exit.ExitCode, ev.Exit.Reason)
	}
	if ev.Exit.FinishedAt.Before(signalled) {
		t.Errorf("FinishedAt %v, before the signal at %v", ev.Exit.FinishedAt, signalled)
	}
	// An instance that exited can still be signalled, to no effect.
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGTERM); err != nil {
		t.Errorf("Signal after exit: %v", err)
	}
	if err := h.r.Signal(context.Background(), "no-such-id", syscall.SIGTERM); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Signal(unknown) = %v, want ErrNotFound", err)
	}
}

func TestSignalReachesProcessGroup(t *testing.T) {
	h := newHarness(t)
	// The shell survives SIGTERM (it traps it) and waits for as long as its
	// child lives: only a signal to the whole group ends the child, and so
	// the shell, before the test's deadline. The child says it is ready once
	// it no longer has the inherited trap.
	script := `trap 'echo got TERM' TERM; (trap - TERM; echo ready; exec sleep 100) & c=$!; ` +
		`while kill -0 $c 2>/dev/null; do wait $c; done; echo child gone`
	pod := newPod(t, shell("main", script))
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("main", "ready")
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := h.waitExit(c.ID)
	if ev.Exit.ExitCode != 0 {
		t.Errorf("exit code %d, want 0", ev.Exit.ExitCode)
	}
	h.waitOutput("main", "got TERM")
	h.waitOutput("main", "child gone")
}

func TestOrphansKilledAfterExit(t *testing.T) {
	h := newHarness(t)
	// The orphan keeps stdout open: without the group kill, the exit event
	// would wait for the shim's drain timeout, and the orphan would live.
	pod := newPod(t, shell("main", "sleep 100 & echo $!; exit 0"))
	pod.Spec.HostPID = true // the orphan's PID is the host's
	h.prepare(pod)
	c, ev := h.run(pod, 0)
	if ev.Exit.ExitCode != 0 {
		t.Fatalf("exit code %d, want 0", ev.Exit.ExitCode)
	}
	lines := logLines(t, c.LogPath)
	if len(lines) != 1 {
		t.Fatalf("log %q, want the orphan's PID", lines)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(lines[0], "stdout "))
	if err != nil {
		t.Fatal(err)
	}
	if !processGone(t, pid) {
		t.Errorf("orphan %d still runs after its container exited", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestOrphansDieWithTheirPIDNamespace: in a container of its own PID
// namespace, what its main process left behind dies with the namespace's
// init, the init helper, once the main process exited.
func TestOrphansDieWithTheirPIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	h := newHarness(t)
	marker := randomSleep(t)
	// Started once the background shell exec'd sleep.
	pod := newPod(t, shell("main", "sleep "+marker+` & until [ "$(head -c 5 /proc/$!/cmdline)" = sleep ]; do :; done; echo started; exec sleep 1000`))
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("main", "started")
	orphan := processWithArgs(t, "sleep", marker)
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitExit(c.ID)
	if !processGone(t, orphan) {
		t.Errorf("orphan %d still runs after its container exited", orphan)
		_ = syscall.Kill(orphan, syscall.SIGKILL)
	}
}

// randomSleep is a duration for `sleep` that no other process runs: its
// command line tells its process from the host.
func randomSleep(t *testing.T) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(100000 + int(b[0])<<8 + int(b[1]))
}

// processWithArgs is the host PID of the one process whose command line
// is args, which must run.
func processWithArgs(t *testing.T, args ...string) int {
	t.Helper()
	want := strings.Join(args, "\x00") + "\x00"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(raw) == want {
			return pid
		}
	}
	t.Fatalf("no process runs %q", args)
	return 0
}

func TestEnvArgsAndWorkingDir(t *testing.T) {
	t.Setenv("PODWARD_TEST_AGENT_ONLY", "leaked")
	h := newHarness(t)
	wd := t.TempDir()
	c := v1.Container{
		Name:    "main",
		Command: []string{"/bin/sh", "-c"},
		Args: []string{
			`echo "args=$0|$1|$2"; echo "A=$A B=$B C=$C D=$D"; echo "host=$HOSTNAME name=$POD_NAME ns=$POD_NS ip=$POD_IP"; ` +
				`echo "path=$PATH"; echo "pwd=$(pwd)"; echo "leak=${PODWARD_TEST_AGENT_ONLY:-none} init=${` + launch.HelperEnv + `:-none} shim=${` + shim.Env + `:-none}"`,
			"$(A)",
			"$$(A)",
			"$(UNDEFINED)",
		},
		Env: []v1.EnvVar{
			{Name: "A", Value: "hello"},
			{Name: "B", Value: "$(A)-world"},
			{Name: "C", Value: "$$(A)"},
			{Name: "D", Value: "$(E)"}, // E is defined later: not expanded
			{Name: "E", Value: "late"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
		WorkingDir: wd,
	}
	pod := newPod(t, c)
	h.prepare(pod)
	cont, ev := h.run(pod, 0)
	if ev.Exit.ExitCode != 0 {
		t.Fatalf("exit code %d", ev.Exit.ExitCode)
	}
	want := []string{
		"stdout args=hello|$(A)|$(UNDEFINED)",
		"stdout A=hello B=hello-world C=$(A) D=$(E)",
		"stdout host=web name=web ns=default ip=127.0.0.1",
		"stdout path=" + defaultPath,
		"stdout pwd=" + wd,
		"stdout leak=none init=none shim=none",
	}
	if got := logLines(t, cont.LogPath); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The process runtime's own defaults come first; the spec overrides them
// in place, and its variables follow in spec order. Only the spec's are
// $(VAR)s; the downward API's IPs are loopback.
func TestContainerEnv(t *testing.T) {
	tests := map[string]struct {
		env      []v1.EnvVar
		want     []string
		wantVars podspec.Vars
	}{
		"defaults": {want: []string{"PATH=" + defaultPath, "HOSTNAME=web"}, wantVars: podspec.Vars{}},
		"spec after the defaults": {
			env:      []v1.EnvVar{{Name: "B", Value: "1"}, {Name: "A", Value: "$(B)$(PATH)"}},
			want:     []string{"PATH=" + defaultPath, "HOSTNAME=web", "B=1", "A=1$(PATH)"},
			wantVars: podspec.Vars{"B": "1", "A": "1$(PATH)"},
		},
		"defaults overridden in place": {
			env:      []v1.EnvVar{{Name: "X", Value: "x"}, {Name: "HOSTNAME", Value: "h"}, {Name: "PATH", Value: "/bin"}},
			want:     []string{"PATH=/bin", "HOSTNAME=h", "X=x"},
			wantVars: podspec.Vars{"X": "x", "HOSTNAME": "h", "PATH": "/bin"},
		},
		"loopback for the IPs": {
			env: []v1.EnvVar{
				{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			},
			want:     []string{"PATH=" + defaultPath, "HOSTNAME=web", "HOST_IP=127.0.0.1", "POD_IP=127.0.0.1"},
			wantVars: podspec.Vars{"HOST_IP": "127.0.0.1", "POD_IP": "127.0.0.1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := v1.Container{Name: "main", Command: []string{"true"}, Env: tc.env}
			env, vars, err := (&Runtime{}).containerEnv(context.Background(), newPod(t, c), &c, "spec.containers[0]")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(env, tc.want) || !maps.Equal(vars, tc.wantVars) {
				t.Errorf("env %q vars %v, want %q and %v", env, vars, tc.want, tc.wantVars)
			}
		})
	}
}

// The service links of the Runtime's lister follow the spec's own
// variables; the spec's win.
func TestContainerEnvServiceLinks(t *testing.T) {
	svcs := &objectstest.Services{}
	svcs.Put(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}})
	c := v1.Container{Name: "main", Command: []string{"true"}, Env: []v1.EnvVar{{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"}}}
	r := &Runtime{objects: runtime.Objects{Services: svcs}}
	env, vars, err := r.containerEnv(context.Background(), newPod(t, c), &c, "spec.containers[0]")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PATH=" + defaultPath, "HOSTNAME=web", "KUBERNETES_SERVICE_PORT=6443",
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
	}
	if !slices.Equal(env, want) || vars["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("env %q vars %v, want %q", env, vars, want)
	}
}

func TestLogAndOutput(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", `echo out 1; echo err 1 >&2; echo out 2; printf 'no newline'`))
	h.prepare(pod)
	c, ev := h.run(pod, 0)
	if ev.Exit.ExitCode != 0 {
		t.Fatalf("exit code %d", ev.Exit.ExitCode)
	}
	if want := h.r.LogPath(pod.UID, "main", 0); c.LogPath != want {
		t.Errorf("LogPath %s, want %s", c.LogPath, want)
	}
	if want := filepath.Join("pods", string(pod.UID), "logs", "main", "0.log"); !strings.HasSuffix(c.LogPath, want) {
		t.Errorf("LogPath %s does not end in %s", c.LogPath, want)
	}
	// Everything is in the log when the exit is reported. The two streams
	// are copied independently, so only each one's order is fixed.
	var stdout, stderr []string
	for _, l := range logLines(t, c.LogPath) {
		if s, ok := strings.CutPrefix(l, "stdout "); ok {
			stdout = append(stdout, s)
		} else {
			stderr = append(stderr, strings.TrimPrefix(l, "stderr "))
		}
	}
	if got, want := strings.Join(stdout, "|"), "out 1|out 2|no newline"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := strings.Join(stderr, "|"), "err 1"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	// The raw file is in the CRI format.
	raw, err := os.ReadFile(c.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z stderr F err 1$`).Match(raw) {
		t.Errorf("log file is not in the CRI format:\n%s", raw)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for _, l := range h.output {
		if l.pod != "web" || l.container != "main" {
			t.Errorf("output line %+v not attributed to web/main", l)
		}
		got = append(got, l.stream+" "+l.line)
	}
	for _, want := range []string{"stdout out 1", "stdout out 2", "stdout no newline", "stderr err 1"} {
		if !contains(got, want) {
			t.Errorf("Output got %q, missing %q", got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestStartFailures(t *testing.T) {
	h := newHarness(t)
	tests := map[string]v1.Container{
		"command not found":   {Name: "main", Command: []string{"podward-no-such-command"}},
		"missing working dir": {Name: "main", Command: []string{"/bin/true"}, WorkingDir: "/podward-no-such-dir"},
		"no command":          {Name: "main"},
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			pod := newPod(t, c)
			h.prepare(pod)
			ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
			if _, err := h.r.StartContainer(context.Background(), pod, ref, 0); err == nil {
				t.Fatal("StartContainer succeeded")
			}
		})
	}
	select {
	case ev := <-h.r.Events():
		t.Errorf("exit event %+v for a container that never started", ev)
	default:
	}
}

func TestStartWithCancelledContextStartsNothing(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", "echo started"))
	h.prepare(pod)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
	if _, err := h.r.StartContainer(ctx, pod, ref, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("StartContainer = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(h.r.LogPath(pod.UID, "main", 0)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("log file of a container that never started: %v", err)
	}
	h.r.mu.Lock()
	n := len(h.r.instances)
	h.r.mu.Unlock()
	if n != 0 {
		t.Errorf("%d instances known after a cancelled start", n)
	}
}

func TestCheck(t *testing.T) {
	volumeMount := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	emptyDir := v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	tests := map[string]struct {
		pod     func(t *testing.T) *model.Pod
		notRoot bool
		selinux bool   // SELinux enforces on the host
		wantErr string // "" for no error
	}{
		"runnable": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.Env = []v1.EnvVar{{Name: "UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}}
				c.VolumeMounts = volumeMount
				p := newPod(t, c)
				p.Spec.Volumes = []v1.Volume{emptyDir}
				return p
			},
		},
		// Every pod is on the host's network: a hostPort is the port the
		// container listens on, or cannot be honoured.
		"hostPort equal to containerPort": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: v1.ProtocolTCP}}
				return newPod(t, c)
			},
		},
		"hostPort other than containerPort": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}, {ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
				return newPod(t, c)
			},
			wantErr: "spec.containers[0].ports[1].hostPort: Unsupported value: 8080: the pod shares the host's network",
		},
		"no command": {
			pod:     func(t *testing.T) *model.Pod { return newPod(t, shell("a", "true"), v1.Container{Name: "b"}) },
			wantErr: "spec.containers[1].command: Required value: the process runtime runs the command itself and has no image to take it from",
		},
		"init container without command": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.InitContainers = []v1.Container{{Name: "init"}}
				return p
			},
			wantErr: "spec.initContainers[0].command: Required value",
		},
		"defer container without command": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Defer = []v1.Container{{Name: "upload"}}
				return p
			},
			wantErr: "metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].command: Required value",
		},
		"runAsUser is honoured as root": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
				p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000}}
				return p
			},
		},
		"runAsUser without root": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.HostPID = true
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
				return p
			},
			notRoot: true,
			wantErr: "spec.containers[0].securityContext.runAsUser: Forbidden: podward is not running as root",
		},
		"fsGroup without root": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.HostPID = true
				p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
				return p
			},
			notRoot: true,
			wantErr: "spec.securityContext: Forbidden: podward is not running as root and cannot run containers as another user or with other groups",
		},
		"own PID namespace without root": {
			pod:     func(t *testing.T) *model.Pod { return newPod(t, shell("main", "true")) },
			notRoot: true,
			wantErr: "spec.hostPID: Unsupported value: false: the process runtime needs root",
		},
		"Localhost seccomp profile": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("x.json")}}
				return p
			},
			wantErr: `spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Localhost"`,
		},
		"pod AppArmor profile": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
				return p
			},
			wantErr: `spec.securityContext.appArmorProfile.type: Unsupported value: "RuntimeDefault"`,
		},
		"SELinux options where SELinux enforces": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1,c2"}}
				return p
			},
			selinux: true,
			wantErr: "spec.containers[0].securityContext.seLinuxOptions: Unsupported value: SELinux enforces",
		},
		"SELinux options where SELinux does not enforce": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1,c2"}}
				return p
			},
		},
		"sysctls": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
				return p
			},
			wantErr: "spec.securityContext.sysctls: Forbidden",
		},
		"shareProcessNamespace": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.ShareProcessNamespace = ptr.To(true)
				return p
			},
			wantErr: "spec.shareProcessNamespace: Unsupported value: true",
		},
		"hostUsers false": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.HostUsers = ptr.To(false)
				return p
			},
			wantErr: "spec.hostUsers: Unsupported value: false",
		},
		"unknown capability": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "MAKE_COFFEE"}}}
				return p
			},
			wantErr: `spec.containers[0].securityContext.capabilities.add[1]: Unsupported value: "MAKE_COFFEE"`,
		},
		"configMap volume": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Volumes = []v1.Volume{emptyDir, {Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
				return p
			},
		},
		"token volume standalone": {
			pod: func(t *testing.T) *model.Pod {
				p := newPod(t, shell("main", "true"))
				p.Spec.Volumes = []v1.Volume{emptyDir, {Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
					Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}},
				}}}}
				return p
			},
			wantErr: `spec.volumes[1].projected.sources[0].serviceAccountToken: Unsupported value: podward standalone cannot mint service account tokens`,
		},
		"env from a file": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.Env = []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{Key: "pw"}}}}
				return newPod(t, c)
			},
			wantErr: "spec.containers[0].env[0].valueFrom.fileKeyRef: Unsupported value",
		},
		"unknown fieldRef": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.phase"}}}}
				return newPod(t, c)
			},
			wantErr: `"status.phase" is not supported`,
		},
		"subPath leaving its volume": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "../etc"}}
				p := newPod(t, c)
				p.Spec.Volumes = []v1.Volume{emptyDir}
				return p
			},
			wantErr: "volumeMounts[0].subPath: Invalid value",
		},
		"volume mounts without root": {
			pod: func(t *testing.T) *model.Pod {
				c := shell("main", "true")
				c.VolumeMounts = volumeMount
				p := newPod(t, c)
				p.Spec.Volumes = []v1.Volume{emptyDir}
				return p
			},
			notRoot: true,
			wantErr: "spec.containers[0].volumeMounts: Forbidden: the process runtime needs root to give the container a private mount namespace",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			// Check is pure: pretending is enough.
			h.r.euid = func() int { return 0 }
			if tc.notRoot {
				h.r.euid = func() int { return 1000 }
			}
			h.r.selinuxEnforcing = func() bool { return tc.selinux }
			err := h.r.Check(tc.pod(t))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, runtime.ErrUnsupported) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check = %v, want ErrUnsupported containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEmptyDirSharedThroughMountPath(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	suffix := randomSuffix(t)
	// A mountPath that does not exist on the host, inside one that does not
	// either: both must be created, and removed at cleanup.
	top := "/podward-test-" + suffix
	config := top + "/config"
	sub := "/podward-test-sub-" + suffix
	t.Cleanup(func() {
		_ = os.Remove(config)
		_ = os.Remove(top)
		_ = os.Remove(sub)
	})

	writer := shell("writer", fmt.Sprintf(`echo hello > %[1]s/greeting && mkdir %[1]s/dir && echo deep > %[1]s/dir/file && echo written`, config))
	writer.VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: config}}
	reader := shell("reader", fmt.Sprintf(`cat %[1]s/greeting %[2]s/file; if touch %[1]s/new 2>/dev/null; then echo writable; else echo read-only; fi`, config, sub))
	reader.VolumeMounts = []v1.VolumeMount{
		{Name: "shared", MountPath: config, ReadOnly: true},
		{Name: "shared", MountPath: sub, SubPath: "dir"},
	}
	pod := newPod(t, writer, reader)
	pod.Spec.Volumes = []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	if err := h.r.Check(pod); err != nil {
		t.Fatal(err)
	}
	h.prepare(pod)
	h.prepare(pod) // idempotent

	wc, wev := h.run(pod, 0)
	if wev.Exit.ExitCode != 0 {
		t.Fatalf("writer exited %d: %q", wev.Exit.ExitCode, logLines(t, wc.LogPath))
	}
	// The data is in the volume; the mountpoint on the host stays empty.
	volume := h.r.volumeDir(pod.UID, "shared")
	if data, err := os.ReadFile(filepath.Join(volume, "greeting")); err != nil || string(data) != "hello\n" {
		t.Errorf("volume greeting = %q, %v", data, err)
	}
	if entries, err := os.ReadDir(config); err != nil || len(entries) != 0 {
		t.Errorf("host mountpoint %s: %v entries, %v; want an empty directory", config, entries, err)
	}

	rc, rev := h.run(pod, 1)
	if rev.Exit.ExitCode != 0 {
		t.Fatalf("reader exited %d: %q", rev.Exit.ExitCode, logLines(t, rc.LogPath))
	}
	want := []string{"stdout hello", "stdout deep", "stdout read-only"}
	if got := logLines(t, rc.LogPath); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reader log %q, want %q", got, want)
	}

	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatalf("CleanupPod: %v", err)
	}
	for _, p := range []string{volume, config, top, sub} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists after CleanupPod (%v)", p, err)
		}
	}
	if _, err := os.Stat(wc.LogPath); err != nil {
		t.Errorf("CleanupPod removed the logs: %v", err)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Errorf("second CleanupPod: %v", err)
	}
	if err := h.r.Signal(context.Background(), wc.ID, syscall.SIGTERM); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Signal after CleanupPod = %v, want ErrNotFound", err)
	}
}

func TestMountpointSharedBetweenPods(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	mountPath := "/podward-test-shared-" + randomSuffix(t)
	t.Cleanup(func() { _ = os.Remove(mountPath) })
	newUser := func() *model.Pod {
		c := shell("main", "echo ready; exec sleep 100")
		c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: mountPath}}
		pod := newPod(t, c)
		pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		h.prepare(pod)
		return pod
	}
	a, b := newUser(), newUser()
	ca, cb := h.start(a, 0), h.start(b, 0)
	h.waitOutput("main", "ready")

	// A pod whose container still runs cannot be cleaned up.
	if err := h.r.CleanupPod(context.Background(), a); err == nil {
		t.Error("CleanupPod of a running pod succeeded")
	}
	for _, c := range []runtime.Container{ca, cb} {
		if err := h.r.Signal(context.Background(), c.ID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		h.waitExit(c.ID)
	}
	if err := h.r.CleanupPod(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mountPath); err != nil {
		t.Errorf("mountpoint removed while pod b still uses it: %v", err)
	}
	if err := h.r.CleanupPod(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mountPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mountpoint left after its last pod was cleaned up: %v", err)
	}
}

func TestMountHelperFailureIsSynchronous(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	mountPath := "/podward-test-fail-" + randomSuffix(t)
	t.Cleanup(func() { _ = os.Remove(mountPath) })
	c := v1.Container{Name: "main", Command: []string{"podward-no-such-command"}}
	c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: mountPath}}
	pod := newPod(t, c)
	pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	h.prepare(pod)
	ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
	_, err := h.r.StartContainer(context.Background(), pod, ref, 0)
	if err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("StartContainer = %v, want executable file not found", err)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func TestExec(t *testing.T) {
	h := newHarness(t)
	wd := t.TempDir()
	c := shell("app", "echo ready; exec sleep 100")
	c.Env = []v1.EnvVar{{Name: "FOO", Value: "bar"}}
	c.WorkingDir = wd
	script := `echo "$FOO $(pwd)"`
	var mountPath string
	if os.Geteuid() == 0 {
		mountPath = "/podward-test-exec-" + randomSuffix(t)
		t.Cleanup(func() { _ = os.Remove(mountPath) })
		c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: mountPath}}
		script += "; cat " + mountPath + "/file"
	}
	pod := newPod(t, c)
	pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	// The host's PIDs, which the test looks for in its /proc
	// (TestExecInItsOwnPIDNamespace has the container's own).
	pod.Spec.HostPID = true
	h.prepare(pod)
	if err := os.WriteFile(filepath.Join(h.r.volumeDir(pod.UID, "v"), "file"), []byte("from the volume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cont := h.start(pod, 0)
	h.waitOutput("app", "ready")
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	ctx := context.Background()

	t.Run("context", func(t *testing.T) {
		out, code, err := h.r.Exec(ctx, pod, ref, []string{"sh", "-c", script + " >&2"})
		if err != nil || code != 0 {
			t.Fatalf("Exec = %q, %d, %v", out, code, err)
		}
		want := "bar " + wd + "\n"
		if mountPath != "" {
			want += "from the volume\n"
		}
		if string(out) != want {
			t.Errorf("output %q, want %q", out, want)
		}
	})
	t.Run("exit code", func(t *testing.T) {
		out, code, err := h.r.Exec(ctx, pod, ref, []string{"sh", "-c", "echo failing; exit 7"})
		if err != nil || code != 7 || string(out) != "failing\n" {
			t.Errorf("Exec = %q, %d, %v; want failing, 7, nil", out, code, err)
		}
	})
	t.Run("output capped", func(t *testing.T) {
		out, code, err := h.r.Exec(ctx, pod, ref, []string{"sh", "-c", "head -c 100000 /dev/zero"})
		if err != nil || code != 0 || len(out) != execOutputLimit {
			t.Errorf("Exec = %d bytes, %d, %v; want %d bytes", len(out), code, err, execOutputLimit)
		}
	})
	t.Run("bounded by ctx", func(t *testing.T) {
		// The command reports its background child's PID through a FIFO,
		// which tells the test that it runs.
		fifo := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			out  []byte
			code int
			err  error
		}
		done := make(chan result, 1)
		go func() {
			out, code, err := h.r.Exec(ctx, pod, ref, []string{"sh", "-c", "sleep 100 & echo $! > " + fifo + "; wait"})
			done <- result{out, code, err}
		}()
		pidc := make(chan string, 1)
		go func() {
			data, err := os.ReadFile(fifo) // returns once the command closed it
			if err != nil {
				t.Error(err)
			}
			pidc <- strings.TrimSpace(string(data))
		}()
		var pid int
		select {
		case s := <-pidc:
			var err error
			if pid, err = strconv.Atoi(s); err != nil {
				t.Fatalf("command wrote %q, not its child's PID", s)
			}
		case <-time.After(waitLimit):
			t.Fatal("exec command did not start")
		}
		cancel()
		select {
		case res := <-done:
			if !errors.Is(res.err, context.Canceled) || res.code != 137 {
				t.Errorf("Exec = %q, %d, %v; want 137 and context.Canceled", res.out, res.code, res.err)
			}
		case <-time.After(waitLimit):
			t.Fatal("Exec did not return after its context ended")
		}
		if !processGone(t, pid) {
			t.Errorf("exec's child %d survived the end of its context", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	t.Run("command not found", func(t *testing.T) {
		if _, _, err := h.r.Exec(ctx, pod, ref, []string{"podward-no-such-command"}); err == nil {
			t.Error("Exec of a missing command succeeded")
		}
	})

	if err := h.r.Signal(ctx, cont.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ev := h.waitExit(cont.ID); ev.Exit.ExitCode != 137 {
		t.Errorf("exit code %d, want 137", ev.Exit.ExitCode)
	}
	if err := h.r.CleanupPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryEmptyDir(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	pod := newPod(t, shell("main", "true"))
	pod.Spec.Volumes = []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	h.prepare(pod)
	h.prepare(pod) // idempotent: mounts once
	dir := h.r.volumeDir(pod.UID, "mem")
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if st.Type != tmpfsMagic {
		t.Errorf("%s is not a tmpfs (type %#x)", dir, st.Type)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left after CleanupPod: %v", dir, err)
	}
}

// A hostPath without a type checks nothing on the host but that its path
// can be looked at: a missing one is fine, one through a file is not.
// (hostfs's tests cover the types.)
func TestPrepareHostPathWithoutType(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unset := v1.HostPathUnset
	tests := map[string]struct {
		hp   v1.HostPathVolumeSource
		want string // "" for no error
	}{
		"nil, missing":        {hp: v1.HostPathVolumeSource{Path: filepath.Join(t.TempDir(), "nothing")}},
		"empty, missing":      {hp: v1.HostPathVolumeSource{Path: filepath.Join(t.TempDir(), "nothing"), Type: &unset}},
		"nil, through a file": {hp: v1.HostPathVolumeSource{Path: filepath.Join(file, "x")}, want: "not a directory"},
		"empty, through a file": {
			hp: v1.HostPathVolumeSource{Path: filepath.Join(file, "x"), Type: &unset}, want: "not a directory",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := prepareHostPath(&tc.hp)
			if tc.want == "" && err != nil {
				t.Fatalf("prepareHostPath = %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("prepareHostPath = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPreparePodHonoursContext(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", "true"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.r.PreparePod(ctx, pod); !errors.Is(err, context.Canceled) {
		t.Errorf("PreparePod = %v, want context.Canceled", err)
	}
}

func TestStatusAndVersion(t *testing.T) {
	r, err := New(Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if name, version, err := r.Version(context.Background()); err != nil || name != RuntimeName || version == "" {
		t.Fatalf("Version = %q %q %v", name, version, err)
	}
	if err := r.Status(context.Background()); err != nil {
		t.Fatalf("Status of an open runtime: %v", err)
	}
	if err := os.Chmod(r.root, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes anyway
		if err := r.Status(context.Background()); err == nil {
			t.Fatal("Status of a runtime whose root is read-only: nil")
		}
	}
	_ = os.Chmod(r.root, 0o700)
	r.Close()
	if err := r.Status(context.Background()); err == nil {
		t.Fatal("Status of a closed runtime: nil")
	}
}
