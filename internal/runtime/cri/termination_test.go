package cri

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// messageFile is the host file mounted at the container's
// terminationMessagePath, as the runtime was asked to mount it.
func (h *harness) messageFile(id string) string {
	h.t.Helper()
	fc := h.f.container(id)
	for _, m := range fc.config.Mounts {
		if m.ContainerPath == "/dev/termination-log" {
			return m.HostPath
		}
	}
	h.t.Fatalf("container %s has no mount at /dev/termination-log: %v", id, fc.config.Mounts)
	return ""
}

// TestTerminationMessage: the file the runtime mounted at the
// terminationMessagePath is read when the exit is seen, as the kubelet
// reads it (kuberuntime_container.go, getTerminationMessage), after the
// runtime's own message; with FallbackToLogsOnError a failure with an empty
// file gets the log's tail. The container's status alone finds the file, so
// a restarted agent reads the same message.
func TestTerminationMessage(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	pod.Spec.InitContainers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	h.prepare(pod)

	app := h.start(pod, "app", 0)
	if err := os.WriteFile(h.messageFile(app.ID), []byte("written by app"), 0o666); err != nil {
		t.Fatal(err)
	}
	writeLog(t, app.LogPath, "stdout", "not the message")
	h.f.exit(t, app.ID, 0, "Completed", "")
	h.relist()
	if ev := h.event(); ev.ID != app.ID || ev.Exit.Message != "written by app" {
		t.Errorf("app's exit = %+v, want the message its file says", ev.Exit)
	}

	setup := h.start(pod, "setup", 0)
	writeLog(t, setup.LogPath, "stderr", "setup failed:", "no such thing")
	h.f.exit(t, setup.ID, 2, "Error", "")
	h.relist()
	if ev := h.event(); ev.ID != setup.ID || ev.Exit.Message != "setup failed:\nno such thing\n" {
		t.Errorf("setup's exit = %+v, want the log's tail", ev.Exit)
	}

	h.reopen()
	list, err := h.r.ListContainers(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "written by app", "setup": "setup failed:\nno such thing\n"}
	for _, cs := range list {
		if cs.Exit == nil || cs.Exit.Message != want[cs.Container] {
			t.Errorf("after a restart, ListContainers has %s's exit %+v, want message %q", cs.Container, cs.Exit, want[cs.Container])
		}
	}
	if len(list) != 2 {
		t.Errorf("ListContainers = %+v, want the two exits", list)
	}
}

// A crash loop leaves no more message files than instances: those of the
// instances removeOldInstances removes go with them; CleanupPod removes
// the rest.
func TestTerminationMessageFilesGoWithTheirInstances(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	var files []string
	for attempt := range 4 {
		c := h.start(pod, "app", attempt)
		files = append(files, h.messageFile(c.ID))
		h.f.exit(t, c.ID, 1, "Error", "")
		h.relist()
		h.event()
	}
	h.f.waitFor(t, "the removal of the message files of attempts 0 and 1", func() bool {
		_, err0 := os.Stat(files[0])
		_, err1 := os.Stat(files[1])
		return os.IsNotExist(err0) && os.IsNotExist(err1)
	})
	for _, f := range files[2:] {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the message file of a kept instance: %v", err)
		}
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.r.root, "pods", "uid-1", "containers")); !os.IsNotExist(err) {
		t.Errorf("message files left after CleanupPod: %v", err)
	}
}
