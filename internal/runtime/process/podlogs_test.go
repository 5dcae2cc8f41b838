package process

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// TestRemovePodLogs: a pod's logs outlive CleanupPod and are listed with
// their last write; RemovePodLogs refuses before the clean-up, then removes
// them with the pod's directory, and is idempotent.
func TestRemovePodLogs(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", `echo a line`))
	h.prepare(pod)
	c, _ := h.run(pod, 0)
	fi, err := os.Stat(c.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.r.RemovePodLogs(ctx, pod.UID); err == nil {
		t.Fatal("RemovePodLogs before CleanupPod succeeded")
	}
	if _, err := os.Stat(c.LogPath); err != nil {
		t.Fatalf("a refused RemovePodLogs touched the log: %v", err)
	}
	if err := h.r.CleanupPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	logs, err := h.r.PodLogs()
	if err != nil {
		t.Fatal(err)
	}
	if last, ok := logs[pod.UID]; len(logs) != 1 || !ok || last.Before(fi.ModTime()) {
		t.Fatalf("PodLogs = %v, want pod %s last written at %v or later", logs, pod.UID, fi.ModTime())
	}
	for range 2 {
		if err := h.r.RemovePodLogs(ctx, pod.UID); err != nil {
			t.Fatalf("RemovePodLogs: %v", err)
		}
	}
	if _, err := os.Lstat(h.r.podDir(pod.UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pod's directory is left: %v", err)
	}
	if logs, err := h.r.PodLogs(); err != nil || len(logs) != 0 {
		t.Errorf("PodLogs after the removal = %v, %v", logs, err)
	}
	if err := h.r.RemovePodLogs(ctx, "../escape"); err == nil {
		t.Error("RemovePodLogs of a UID that is a path succeeded")
	}
}
