package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resizePod has three Burstable containers; web's resizePolicy restarts it
// for a memory change, and once's too, although its own restartPolicy is
// Never.
const resizePod = `
apiVersion: v1
kind: Pod
metadata:
  name: rs
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"]
    resources:
      requests:
        cpu: 100m
      limits:
        cpu: 200m
        memory: 32Mi
  - name: web
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"]
    resizePolicy:
    - resourceName: memory
      restartPolicy: RestartContainer
    resources:
      limits:
        memory: 32Mi
  - name: once
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"]
    restartPolicy: Never
    resizePolicy:
    - resourceName: memory
      restartPolicy: RestartContainer
    resources:
      limits:
        memory: 32Mi
`

// podward resize changes a running container's limits in place (KEP-1287):
// its instance's cgroup gets the new memory limit and CFS quota, the
// container is not restarted (restartCount 0, the same start time), and
// status.containerStatuses[].resources reports the new limits; a memory
// limit below the container's usage is left in progress with reason Error
// (doPodResizeAction). A container
// whose resizePolicy says RestartContainer for memory is restarted, and
// only it (kubelet 1.37, pkg/kubelet/kuberuntime/kuberuntime_manager.go,
// computePodResizeAction).
func TestResizeInPlace(t *testing.T) {
	e := newCgroupEnv(t)
	a := startAgent(t, e.args()...)
	a.apply("rs", writeManifest(t, t.TempDir(), resizePod, nil))
	a.waitPod("rs", "condition=Ready", lineTimeout)
	uid := a.podUID("rs")
	started := a.getPod("rs").container(t, "app").State.Running.StartedAt
	id := strings.TrimPrefix(strings.TrimSpace(a.mustCLI("get", "pod", "rs", "-o", "jsonpath={.status.containerStatuses[0].containerID}")), "podward://")
	if id == "" {
		t.Fatal("no containerID for app")
	}
	v2 := len(e.dirs) == 1
	memFile, cpuFile := filepath.Join(e.dirs[0], "burstable", "pod"+uid, id, "memory.limit_in_bytes"), filepath.Join(e.dirs[1%len(e.dirs)], "burstable", "pod"+uid, id, "cpu.cfs_quota_us")
	if v2 {
		memFile, cpuFile = filepath.Join(e.dirs[0], "burstable", "pod"+uid, id, "memory.max"), filepath.Join(e.dirs[0], "burstable", "pod"+uid, id, "cpu.max")
	}
	read := func(f string) string {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := read(memFile); got != "33554432" {
		t.Fatalf("%s = %s before the resize, want 33554432 (32Mi)", memFile, got)
	}

	out := a.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=64Mi,cpu=400m")
	if strings.TrimSpace(out) != "pod/rs resource requirements updated" {
		t.Errorf("podward resize said %q", out)
	}
	a.waitPod("rs", "jsonpath={.status.containerStatuses[0].resources.limits.memory}=64Mi", lineTimeout)
	if got := read(memFile); got != "67108864" {
		t.Errorf("%s = %s after the resize, want 67108864 (64Mi)", memFile, got)
	}
	if got := read(cpuFile); !strings.HasPrefix(got, "40000") {
		t.Errorf("%s = %s after the resize, want a 40000 µs quota (400m)", cpuFile, got)
	}
	app := a.getPod("rs").container(t, "app")
	if app.RestartCount != 0 || app.State.Running == nil || app.State.Running.StartedAt != started {
		t.Errorf("app after the resize = %s, want it running since %s, never restarted", app, started)
	}

	// A memory limit below what the container uses is not applied: the
	// resize stays in progress with reason Error, the limit as it was,
	// until a resize that fits replaces it.
	a.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=4Ki")
	a.waitPod("rs", `jsonpath={.status.conditions[?(@.type=="PodResizeInProgress")].reason}=Error`, lineTimeout)
	if got := read(memFile); got != "67108864" {
		t.Errorf("%s = %s after a resize below usage, want it left at 67108864", memFile, got)
	}
	if msg := a.mustCLI("get", "pod", "rs", "-o", `jsonpath={.status.conditions[?(@.type=="PodResizeInProgress")].message}`); !strings.Contains(msg, "below current usage") {
		t.Errorf("PodResizeInProgress message %q", msg)
	}
	a.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=64Mi")
	for deadline := time.Now().Add(lineTimeout); a.getPod("rs").condition("PodResizeInProgress") != ""; {
		if time.Now().After(deadline) {
			t.Fatalf("PodResizeInProgress still there once the limit fits again")
		}
	}

	a.mustCLI("resize", "pod/rs", "--containers=web", "--limits=memory=48Mi")
	a.waitPod("rs", "jsonpath={.status.containerStatuses[1].restartCount}=1", lineTimeout)
	a.waitPod("rs", "jsonpath={.status.containerStatuses[1].resources.limits.memory}=48Mi", lineTimeout)
	if app := a.getPod("rs").container(t, "app"); app.RestartCount != 0 {
		t.Errorf("app = %s, want it not restarted by web's resize", app)
	}

	// A restart for a resize happens whatever the container's restart
	// policy and its exit code (0 here, on SIGTERM): the kubelet kills it
	// and starts it again in one sync (computePodResizeAction).
	a.mustCLI("resize", "pod/rs", "--containers=once", "--limits=memory=48Mi")
	a.waitPod("rs", "jsonpath={.status.containerStatuses[2].restartCount}=1", lineTimeout)
	a.waitPod("rs", "jsonpath={.status.containerStatuses[2].resources.limits.memory}=48Mi", lineTimeout)
	if once := a.getPod("rs").container(t, "once"); once.State.Running == nil || once.LastState.Terminated == nil || once.LastState.Terminated.ExitCode != 0 {
		t.Errorf("once after its resize = %s, want it running again after an exit 0", once)
	}
	a.mustCLI("delete", "pod", "rs", "--timeout", "20s")
}

// What the node allocated to each container and what each running
// instance has are in the pod worker's checkpoint (the kubelet's
// allocation checkpoints, pkg/kubelet/allocation): after an agent killed
// with SIGKILL, a container resized before keeps its resized limits in its
// cgroup and in status.containerStatuses[].resources, and a resize the
// runtime refused (a memory limit below usage) is still in progress, with
// reason Error, the instance's limits as they are — not the spec's.
func TestResizeSurvivesAgentKill(t *testing.T) {
	e := newCgroupEnv(t)
	dir := t.TempDir()
	a := startAgentIn(t, dir, e.args()...)
	a.apply("rs", writeManifest(t, t.TempDir(), resizePod, nil))
	a.waitPod("rs", "condition=Ready", lineTimeout)
	uid := a.podUID("rs")
	id := strings.TrimPrefix(strings.TrimSpace(a.mustCLI("get", "pod", "rs", "-o", "jsonpath={.status.containerStatuses[0].containerID}")), "podward://")
	memFile := filepath.Join(e.dirs[0], "burstable", "pod"+uid, id, "memory.limit_in_bytes")
	if len(e.dirs) == 1 {
		memFile = filepath.Join(e.dirs[0], "burstable", "pod"+uid, id, "memory.max")
	}
	a.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=64Mi")
	a.waitPod("rs", "jsonpath={.status.containerStatuses[0].resources.limits.memory}=64Mi", lineTimeout)
	a.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=4Ki")
	a.waitPod("rs", `jsonpath={.status.conditions[?(@.type=="PodResizeInProgress")].reason}=Error`, lineTimeout)
	_ = a.cmd.Process.Kill()
	<-a.done

	b := startAgentIn(t, dir, e.args()...)
	b.pods = append(b.pods, "rs")
	b.waitPod("rs", "condition=Ready", lineTimeout)
	b.waitPod("rs", `jsonpath={.status.conditions[?(@.type=="PodResizeInProgress")].reason}=Error`, lineTimeout)
	if got := strings.TrimSpace(b.mustCLI("get", "pod", "rs", "-o", "jsonpath={.status.containerStatuses[0].resources.limits.memory}")); got != "64Mi" {
		t.Errorf("app's memory limit in its status after the restart: %q, want its instance's, 64Mi", got)
	}
	if app := b.getPod("rs").container(t, "app"); app.RestartCount != 0 {
		t.Errorf("app = %s, want it adopted, never restarted", app)
	}
	if b, err := os.ReadFile(memFile); err != nil || strings.TrimSpace(string(b)) != "67108864" {
		t.Errorf("%s = %q (%v) after the restart, want 67108864 (64Mi)", memFile, b, err)
	}
	// Once it fits, the next agent applies it.
	b.mustCLI("resize", "pod/rs", "--containers=app", "--limits=memory=48Mi")
	b.waitPod("rs", "jsonpath={.status.containerStatuses[0].resources.limits.memory}=48Mi", lineTimeout)
	if b, err := os.ReadFile(memFile); err != nil || strings.TrimSpace(string(b)) != "50331648" {
		t.Errorf("%s = %q (%v) after the next resize, want 50331648 (48Mi)", memFile, b, err)
	}
	b.mustCLI("delete", "pod", "rs", "--timeout", "20s")
}
