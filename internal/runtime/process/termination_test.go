package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// withMessage gives c a terminationMessagePath and policy, as
// model.Default and a pod's spec would.
func withMessage(c v1.Container, path string, policy v1.TerminationMessagePolicy) v1.Container {
	c.TerminationMessagePath = path
	c.TerminationMessagePolicy = policy
	return c
}

// assertHostFileEmpty fails when path on the host has content: what a
// container writes at its terminationMessagePath goes to its own file.
func assertHostFileEmpty(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("the mountpoint %s on the host: %v", path, err)
		return
	}
	if fi.Size() != 0 {
		t.Errorf("the host's %s has %d bytes: a container wrote through to the host", path, fi.Size())
	}
}

// TestTerminationMessageFile: what a container writes to its
// terminationMessagePath becomes its exit's message, as the kubelet reads
// the file it mounted there (kuberuntime_container.go, makeMounts and
// getTerminationMessage). On the process runtime the path is in the
// container's private mount namespace: a file of the instance's
// bind-mounted on the path, which hides nothing else (the host's /dev stays
// usable) and leaves the host's path as it was.
func TestTerminationMessageFile(t *testing.T) {
	requireRoot(t)
	suffix := randomSuffix(t)
	custom := "/tmp/podward-msg-" + suffix
	volumePath := "/podward-test-msgvol-" + suffix
	t.Cleanup(func() {
		_ = os.Remove(custom)
		_ = os.Remove(volumePath)
	})
	tests := map[string]struct {
		path    string
		volume  bool   // an emptyDir mounted at volumePath
		subPath string // of that mount
		script  string
		want    string
	}{
		"/dev/termination-log, with the rest of /dev as it was": {
			path:   "/dev/termination-log",
			script: `printf 'bye: %s %s' "$(head -c 3 /dev/zero | wc -c)" "$(ls /dev/null)" > /dev/termination-log; echo to /dev/null > /dev/null; exit 3`,
			want:   "bye: 3 /dev/null",
		},
		"a path of its own": {
			path:   custom,
			script: `echo line one > ` + custom + `; echo line two >> ` + custom,
			want:   "line one\nline two\n",
		},
		"a path inside a volume": {
			path:   volumePath + "/sub/msg",
			volume: true,
			script: `echo in the volume > ` + volumePath + `/sub/msg`,
			want:   "in the volume\n",
		},
		"a path inside a volume's subPath": {
			path:    volumePath + "/sub/msg",
			volume:  true,
			subPath: "part",
			script:  `echo in the subPath > ` + volumePath + `/sub/msg`,
			want:    "in the subPath\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			c := withMessage(shell("app", tc.script), tc.path, v1.TerminationMessageReadFile)
			if tc.volume {
				c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: volumePath, SubPath: tc.subPath}}
			}
			pod := newPod(t, c)
			if tc.volume {
				pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			}
			h.prepare(pod)
			ctr, ev := h.run(pod, 0)
			if ev.Exit.Message != tc.want {
				t.Errorf("exit message %q, want %q; log %q", ev.Exit.Message, tc.want, logLines(t, ctr.LogPath))
			}
			list, err := h.r.ListContainers(context.Background(), pod.UID)
			if err != nil || len(list) != 1 || list[0].Exit == nil || list[0].Exit.Message != tc.want {
				t.Errorf("ListContainers = %+v, %v; want the exit with message %q", list, err, tc.want)
			}
			if !tc.volume {
				assertHostFileEmpty(t, tc.path)
			} else if _, err := os.Stat(filepath.Join(h.r.volumeDir(pod.UID, "v"), tc.subPath, "sub", "msg")); err != nil {
				t.Errorf("the mountpoint of the file is not in the volume: %v", err)
			}
			if err := h.r.CleanupPod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTerminationMessageFallbackToLogs: with FallbackToLogsOnError, a
// container that failed and left its file empty gets the tail of its log
// (kuberuntime_container.go, convertToKubeContainerStatus); one that
// succeeded, or wrote its file, does not. Without root the container has
// no file (no mount namespace), and the log is all there is.
func TestTerminationMessageFallbackToLogs(t *testing.T) {
	tests := map[string]struct {
		notRoot bool
		script  string
		want    string
	}{
		"a failure with an empty file": {
			script: `echo starting >&2; echo it broke >&2; exit 2`,
			want:   "starting\nit broke\n",
		},
		"a success says nothing": {
			script: `echo all fine; exit 0`,
			want:   "",
		},
		"the file wins": {
			script: `echo output; echo the file says > /dev/termination-log; exit 2`,
			want:   "the file says\n",
		},
		"without root: a failure": {
			notRoot: true,
			script:  `echo no root here; exit 1`,
			want:    "no root here\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if !tc.notRoot {
				requireRoot(t)
			}
			h := newHarness(t)
			if tc.notRoot {
				h.r.euid = func() int { return 1000 }
			}
			pod := newPod(t, withMessage(shell("app", tc.script), "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError))
			h.prepare(pod)
			ctr, ev := h.run(pod, 0)
			if ev.Exit.Message != tc.want {
				t.Errorf("exit message %q, want %q; log %q", ev.Exit.Message, tc.want, logLines(t, ctr.LogPath))
			}
			_, err := os.Stat(filepath.Join(h.r.instanceDir(pod.UID, ctr.ID), shim.TerminationLogFile))
			if hasFile := err == nil; hasFile == tc.notRoot {
				t.Errorf("the instance has a termination-log file: %v; want %v", hasFile, !tc.notRoot)
			}
		})
	}
}

// TestTerminationMessageShareOfThePod: a container's message is cut to its
// share of the pod's 12 KiB (the kubelet's status manager,
// status_manager.go normalizeStatus), after the file was read from its end
// (its last 4 KiB).
func TestTerminationMessageShareOfThePod(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	// 5000 bytes: a head that the 4 KiB from the end cut, then digits.
	script := `head -c 904 /dev/zero | tr '\0' h > /dev/termination-log; for i in $(seq 0 409); do printf '%09d\n' $i; done >> /dev/termination-log`
	main := withMessage(shell("app", script), "/dev/termination-log", v1.TerminationMessageReadFile)
	idle := func(name string) v1.Container { return shell(name, "exit 0") }
	pod := newPod(t, main, idle("b"), idle("c"), idle("d")) // 12 KiB / 4 = 3 KiB each
	h.prepare(pod)
	_, ev := h.run(pod, 0)
	var want strings.Builder
	for i := range 410 {
		fmt.Fprintf(&want, "%09d\n", i)
	}
	full := want.String()
	full = full[len(full)-4096:][:3072]
	if ev.Exit.Message != full {
		t.Errorf("exit message of %d bytes starting %q, want the first 3072 of the file's last 4096 bytes, starting %q",
			len(ev.Exit.Message), ev.Exit.Message[:min(len(ev.Exit.Message), 20)], full[:20])
	}
}

// TestExecSeesTerminationMessageFile: a command run in a container's
// context (a preStop hook) writes the same file as the container, as an
// exec in a container does.
func TestExecSeesTerminationMessageFile(t *testing.T) {
	requireRoot(t)
	h := newHarness(t)
	pod := newPod(t, withMessage(shell("app", "echo ready; exec sleep 100"), "/dev/termination-log", v1.TerminationMessageReadFile))
	h.prepare(pod)
	ctr := h.start(pod, 0)
	h.waitOutput("app", "ready")
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"/bin/sh", "-c", "echo written by the hook > /dev/termination-log"})
	if err != nil || code != 0 {
		t.Fatalf("Exec = %q, %d, %v", out, code, err)
	}
	if err := h.r.Signal(context.Background(), ctr.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ev := h.waitExit(ctr.ID); ev.Exit.Message != "written by the hook\n" {
		t.Errorf("exit message %q, want what the hook wrote", ev.Exit.Message)
	}
	assertHostFileEmpty(t, "/dev/termination-log")
}
