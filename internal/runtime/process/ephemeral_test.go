package process

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// An ephemeral container with a targetContainerName (kubectl debug
// --target) joins its target's running instance's mount and UTS
// namespaces, as an exec in the target does: it sees the tmpfs the target
// mounted itself over a directory of its emptyDir and the host name it
// set, also through an agent that restarted (a new Runtime on the root,
// which adopted the target). Mounts of its own would be made in the
// target's namespace: Check refuses them. A target that does not run is
// an error, as in the kubelet (pkg/kubelet/kuberuntime/kuberuntime_container.go,
// startContainer and getTargetID: the runtime finds no running target).
func TestEphemeralJoinsTheTargetsNamespaces(t *testing.T) {
	if !launch.CanUnshareUTS() {
		t.Skip("needs mount and UTS namespaces (root)")
	}
	root := t.TempDir()
	h := newHarnessAt(t, root)
	data := filepath.Join(t.TempDir(), "data")
	own := filepath.Join(data, "own")
	c := shell("app", `mkdir `+own+` && mount -t tmpfs none `+own+` && echo in-the-tmpfs > `+own+`/f &&
hostname set-by-app && echo ready; exec sleep 100`)
	// It mounts and names its host: CAP_SYS_ADMIN.
	c.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	pod := dataPod(t, c, data)
	debug := func(name string) {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name:    name,
				Command: []string{"/bin/sh", "-c", "cat " + own + "/f /proc/sys/kernel/hostname"},
				// As the API server defaults it: mounted in the
				// target's namespace, the file would be the target's.
				TerminationMessagePath: "/dev/termination-log",
			},
			TargetContainerName: "app",
		})
	}
	debug("seen")
	debug("seen-again")
	h.prepare(pod)
	app := h.start(pod, 0)
	h.waitOutput("app", "ready")

	ref := model.ContainerRef{Name: "seen", Role: model.RoleEphemeral, Index: 0}
	cont, err := h.r.StartContainer(context.Background(), pod, ref, 0)
	if err != nil {
		t.Fatalf("StartContainer(seen): %v", err)
	}
	if ev := h.waitExit(cont.ID); ev.Exit.ExitCode != 0 {
		t.Fatalf("seen exited with %+v", ev.Exit)
	}
	h.waitOutput("seen", "set-by-app")
	h.waitOutput("seen", "in-the-tmpfs")

	// The agent restarts: the next Runtime's debug container joins the
	// target it adopted.
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	h = newHarnessAt(t, root)
	ref = model.ContainerRef{Name: "seen-again", Role: model.RoleEphemeral, Index: 1}
	cont, err = h.r.StartContainer(context.Background(), pod, ref, 0)
	if err != nil {
		t.Fatalf("StartContainer(seen-again) after a restart: %v", err)
	}
	if ev := h.waitExit(cont.ID); ev.Exit.ExitCode != 0 {
		t.Fatalf("seen-again exited with %+v", ev.Exit)
	}
	h.waitOutput("seen-again", "set-by-app")
	h.waitOutput("seen-again", "in-the-tmpfs")

	// Mounts of its own: refused.
	withMounts := pod.DeepCopy()
	withMounts.Spec.EphemeralContainers[1].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/elsewhere"}}
	if err := h.r.Check(&model.Pod{Pod: withMounts}); !errors.Is(err, runtime.ErrUnsupported) || !strings.Contains(err.Error(), "spec.ephemeralContainers[1].volumeMounts") {
		t.Errorf("Check of a debug container with a target and volumeMounts = %v, want ErrUnsupported on its volumeMounts", err)
	}

	// The target exits: a debug container targeting it does not start.
	if err := h.r.Signal(context.Background(), app.ID, 9); err != nil {
		t.Fatal(err)
	}
	h.waitExit(app.ID)
	if _, err := h.r.StartContainer(context.Background(), pod, ref, 1); err == nil || !strings.Contains(err.Error(), `targetContainerName "app"`) {
		t.Errorf("StartContainer with the target gone = %v, want an error naming the target", err)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}
