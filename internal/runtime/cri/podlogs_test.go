package cri

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// TestRemovePodLogs: a pod's logs outlive CleanupPod and are listed;
// RemovePodLogs refuses while the CRI runtime has containers of the pod,
// then removes them with the pod's directory, and is idempotent.
func TestRemovePodLogs(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	ctx := context.Background()
	if err := h.r.RemovePodLogs(ctx, pod.UID); err == nil {
		t.Fatal("RemovePodLogs with a container of the pod succeeded")
	}
	if _, err := os.Stat(c.LogPath); err != nil {
		t.Fatalf("a refused RemovePodLogs touched the log: %v", err)
	}
	h.f.exit(t, c.ID, 0, "Completed", "")
	if err := h.r.CleanupPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	h.event()
	if logs, err := h.r.PodLogs(); err != nil || len(logs) != 1 || logs[pod.UID].IsZero() {
		t.Fatalf("PodLogs after CleanupPod = %v, %v; want the pod's", logs, err)
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
}
