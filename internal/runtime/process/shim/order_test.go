package shim

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/internal/runtime/process/launch"
)

// pod is a pod's worth of instances sharing an order directory, whose
// containers append to one record file. The test process starts their
// shims but is no agent unless it holds the agent lock (holdAgent).
type pod struct {
	t         *testing.T
	dir       string // the order directory
	agentLock string
	rec       string
	grace     int64
}

func newPod(t *testing.T, grace int64) *pod {
	dir := t.TempDir()
	p := &pod{t: t, dir: filepath.Join(dir, "order"), agentLock: filepath.Join(dir, "agent.lock"), rec: filepath.Join(dir, "rec"), grace: grace}
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// holdAgent makes the test the root's agent until the test ends.
func (p *pod) holdAgent() {
	f, err := HoldAgentLock(p.agentLock)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { f.Close() })
}

// serving is a container that records "start NAME", then "stop NAME"
// when SIGTERM comes, and exits 0; stubborn ignores SIGTERM.
func serving(name string, stubborn bool) string {
	trap := "trap 'echo stop " + name + " >> $REC; exit 0' TERM"
	if stubborn {
		trap = "trap 'echo ignored " + name + " >> $REC' TERM"
	}
	return trap + "; echo start " + name + " >> $REC; echo ready; while :; do sleep 1 & wait; done"
}

// start starts the shim of the instance name, of role and index, and
// waits until its container runs its script.
func (p *pod) start(name string, role Role, index int, script string) (string, *Proc) {
	t := p.t
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	spec := &Spec{
		ID: name, PodUID: "uid", Container: name,
		Process: launch.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "REC=" + p.rec}, Dir: "/"},
		LogPath: filepath.Join(t.TempDir(), "0.log"),
		Order: &Order{Role: role, Index: index, GracePeriodSeconds: p.grace, StopSignal: syscall.SIGTERM,
			PodDir: p.dir, AgentLock: p.agentLock},
	}
	if err := Create(dir, spec); err != nil {
		t.Fatal(err)
	}
	proc, _, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !proc.Exited() {
			_ = Signal(dir, syscall.SIGKILL)
			waitGone(t, proc)
		}
		proc.Close()
	})
	waitLog(t, spec.LogPath, "ready")
	return dir, proc
}

// records are the record file's lines.
func (p *pod) records() []string {
	data, _ := os.ReadFile(p.rec)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func exitCode(t *testing.T, dir string) int32 {
	t.Helper()
	exit, err := LoadExit(dir)
	if err != nil || exit == nil {
		t.Fatalf("no exit in %s: %+v, %v", dir, exit, err)
	}
	return exit.ExitCode
}

func TestShimsStopInThePodsOrderWithoutAnAgent(t *testing.T) {
	p := newPod(t, 30)
	_, s0 := p.start("s0", RoleSidecar, 0, serving("s0", false))
	_, s1 := p.start("s1", RoleSidecar, 1, serving("s1", false))
	_, m := p.start("m", RoleMain, 2, serving("m", false))
	// All at once, as an init system does, the first sidecar first.
	for _, proc := range []*Proc{s0, s1, m} {
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, proc := range []*Proc{m, s1, s0} {
		waitGone(t, proc)
	}
	got := strings.Join(p.records(), ", ")
	if want := "start s0, start s1, start m, stop m, stop s1, stop s0"; got != want {
		t.Errorf("records %q, want %q", got, want)
	}
	if left, _ := os.ReadDir(p.dir); len(left) != 1 || left[0].Name() != StopBeganFile {
		t.Errorf("order directory after the stop: %v, want only %s", left, StopBeganFile)
	}
}

func TestShimPassesStopOnAtOnceWhileAnAgentRuns(t *testing.T) {
	p := newPod(t, 30)
	p.holdAgent()
	_, s0 := p.start("s0", RoleSidecar, 0, serving("s0", false))
	_, m := p.start("m", RoleMain, 1, serving("m", false))
	if err := s0.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, s0)
	if m.Exited() {
		t.Error("the main exited with its sidecar")
	}
	if got := p.records(); !slices.Contains(got, "stop s0") || slices.Contains(got, "stop m") {
		t.Errorf("records %q: want the sidecar stopped, not the main", got)
	}
}

func TestShimsKillAtThePodsGraceDeadline(t *testing.T) {
	p := newPod(t, 1)
	sdir, s := p.start("s", RoleSidecar, 0, serving("s", false))
	mdir, m := p.start("m", RoleMain, 1, serving("m", true))
	began := time.Now()
	for _, proc := range []*Proc{s, m} {
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, m)
	waitGone(t, s)
	took := time.Since(began)
	// The main got SIGTERM at once (it ignored it) and SIGKILL no sooner
	// than MinKillDelay after it; the sidecar stopped at the deadline,
	// without waiting for its turn.
	if code := exitCode(t, mdir); code != 128+int32(syscall.SIGKILL) {
		t.Errorf("main exit code %d, want SIGKILL's", code)
	}
	if code := exitCode(t, sdir); code != 0 {
		t.Errorf("sidecar exit code %d, want 0 (it stopped on its stop signal)", code)
	}
	if took < MinKillDelay {
		t.Errorf("all gone after %v, before the main's %v", took, MinKillDelay)
	}
	got := strings.Join(p.records(), ", ")
	if want := "start s, start m, ignored m, stop s"; got != want {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestWaitsFor(t *testing.T) {
	for _, tc := range []struct {
		role         Role
		index        int
		other        Role
		otherIndex   int
		want         bool
		whyIfNotSeen string
	}{
		{RoleMain, 3, RoleMain, 4, false, "mains stop together"},
		{RoleMain, 3, RoleSidecar, 0, false, "mains stop before sidecars"},
		{RoleMain, 3, RoleDefer, 5, true, "defer containers run before the mains stop"},
		{RoleInit, 1, RoleSidecar, 0, false, "an init container stops at once"},
		{RoleSidecar, 0, RoleMain, 3, true, "sidecars stop after the mains"},
		{RoleSidecar, 0, RoleInit, 2, true, "sidecars stop after the init containers"},
		{RoleSidecar, 0, RoleSidecar, 1, true, "sidecars stop in reverse"},
		{RoleSidecar, 1, RoleSidecar, 0, false, "sidecars stop in reverse"},
		{RoleSidecar, 1, RoleDefer, 5, true, "defer containers before sidecars"},
		{RoleDefer, 5, RoleMain, 3, false, "defer containers wait for nobody"},
	} {
		if got := waitsFor(tc.role, tc.index, tc.other, tc.otherIndex); got != tc.want {
			t.Errorf("waitsFor(%v %d, %v %d) = %v: %s", tc.role, tc.index, tc.other, tc.otherIndex, got, tc.whyIfNotSeen)
		}
	}
}

func TestLockNames(t *testing.T) {
	name := lockName(RoleSidecar, 7, "abc")
	if role, index, ok := parseLockName(name); !ok || role != RoleSidecar || index != 7 {
		t.Errorf("parseLockName(%q) = %v %d %v", name, role, index, ok)
	}
	for _, bad := range []string{StopBeganFile, "main.x.id.lock", "other.1.id.lock", "main.1.id"} {
		if _, _, ok := parseLockName(bad); ok {
			t.Errorf("parseLockName(%q) ok", bad)
		}
	}
}
