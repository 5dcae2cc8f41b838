package process

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/runtime"
)

// TestWarnsOfDroppedOutput: a container whose log takes nothing (a full
// disk; here its log is /dev/full) loses its output, and the runtime says
// so on Warnings, from its shim's notices, before the instance's exit.
func TestWarnsOfDroppedOutput(t *testing.T) {
	// Without Output: there is nothing to follow in /dev/full.
	h := &harness{t: t, clk: testingclock.NewFakeClock(epoch), changed: make(chan struct{}, 1), events: map[string]runtime.Event{}}
	r, err := New(Config{Root: t.TempDir(), Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	t.Cleanup(func() { _ = r.Close() })
	pod := newPod(t, shell("app", "echo hello; echo world"))
	h.prepare(pod)
	logPath := h.r.LogPath(pod.UID, "app", 0)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", logPath); err != nil {
		t.Fatal(err)
	}
	c := h.start(pod, 0)
	h.waitExit(c.ID)
	select {
	case w := <-h.r.Warnings():
		want := runtime.Warning{PodUID: pod.UID, Container: "app", ID: c.ID, Reason: runtime.WarningLogDropped,
			Message: "12 bytes of the container's stdout were dropped: its log could not be written (no space left on device) until it exited"}
		if w != want {
			t.Fatalf("warning %+v\nwant %+v", w, want)
		}
	case <-time.After(waitLimit):
		t.Fatal("no warning of the dropped output")
	}
	if st, _ := h.r.ListContainers(t.Context(), pod.UID); len(st) != 1 || st[0].Exit == nil || st[0].Exit.ExitCode != 0 {
		t.Fatalf("instance %+v, want it exited 0", st)
	}
}
