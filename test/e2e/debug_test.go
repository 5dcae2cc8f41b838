package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// debugPod's container writes a marker into its emptyDir and waits.
const debugPod = `
apiVersion: v1
kind: Pod
metadata:
  name: debugged
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo from-app > /data/marker; while true; do sleep 100 & wait; done"]
    volumeMounts:
    - name: data
      mountPath: /data
`

// TestDebug: podward debug adds ephemeral containers to a running pod on
// the process runtime. One runs (its status in `podward get pod -o yaml`'s
// status.ephemeralContainerStatuses); one with --target reads the
// target's emptyDir at the target's path (its mounts); an agent restart
// resumes them as they are, never starting one again (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go, computePodActions: an
// ephemeral container is started once).
func TestDebug(t *testing.T) {
	dir := t.TempDir()
	a := startAgentIn(t, dir)
	a.apply("debugged", writeManifest(t, t.TempDir(), debugPod, map[string]string{"Bash": "/bin/bash"}))
	a.waitPod("debugged", "condition=Ready", lineTimeout)

	out := a.mustCLI("debug", "debugged", "--image=busybox", "-c", "dbg", "--", "/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done")
	if out != "" {
		t.Errorf("podward debug -c dbg printed %q", out)
	}
	a.waitPod("debugged", "jsonpath={.status.ephemeralContainerStatuses[0].state.running.startedAt}", lineTimeout)
	out = a.mustCLI("debug", "debugged", "--image=busybox", "--target=app", "-c", "seen", "--", "cat", "/data/marker")
	if !strings.HasPrefix(out, `Targeting container "app".`) {
		t.Errorf("podward debug --target=app printed %q, want kubectl's note", out)
	}
	// A filter, not an index: kubectl wait fails at once on an index out of
	// bounds (client-go's jsonpath), and "seen" is in the status only once
	// the worker took the update.
	a.waitPod("debugged", `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="seen")].state.terminated.exitCode}=0`, lineTimeout)
	if got := a.mustCLI("logs", "debugged", "-c", "seen"); got != "from-app\n" {
		t.Errorf("log of the ephemeral container targeting app = %q, want the target's emptyDir's marker", got)
	}

	y := a.mustCLI("get", "pod", "debugged", "-o", "yaml")
	if got := ephemeralSummary(t, y); got != "dbg running 0, seen terminated 0" || !strings.Contains(y, "\n  phase: Running\n") {
		t.Fatalf("get pod -o yaml: ephemeralContainerStatuses %s\n%s", got, y)
	}

	a.stop()
	a = startAgentIn(t, dir)
	a.pods = append(a.pods, "debugged")
	a.waitPod("debugged", "condition=Ready", lineTimeout)
	if got := ephemeralSummary(t, a.mustCLI("get", "pod", "debugged", "-o", "json")); got != "dbg running 0, seen terminated 0" {
		t.Fatalf("after an agent restart: ephemeralContainerStatuses %s", got)
	}
}

// targetedPod's container mounts a tmpfs of its own over a directory of
// its emptyDir and sets its host name; it is ready once both are done.
const targetedPod = `
apiVersion: v1
kind: Pod
metadata:
  name: targeted
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; mkdir -p /data/own && mount -t tmpfs none /data/own && echo in-the-tmpfs > /data/own/f && hostname set-by-app; while true; do sleep 100 & wait; done"]
    # it mounts and names its host: CAP_SYS_ADMIN
    securityContext: {privileged: true}
    volumeMounts:
    - name: data
      mountPath: /data
    readinessProbe:
      exec:
        command: ["{{.Bash}}", "-c", "cat /data/own/f && test \"$(cat /proc/sys/kernel/hostname)\" = set-by-app"]
      periodSeconds: 1
`

// TestDebugTargetNamespaces: on the process runtime an ephemeral container
// with --target runs in its target's mount and UTS namespaces, as an exec
// in the target does: it sees the tmpfs the target mounted itself and the
// host name the target set. (On a CRI runtime --target shares the target's
// process namespace, the kubelet's NamespaceMode_TARGET; with no image
// root of its own the process runtime's debug container shares its
// target's view of the file system instead.)
func TestDebugTargetNamespaces(t *testing.T) {
	needRoot(t)
	a := startAgent(t)
	a.apply("targeted", writeManifest(t, t.TempDir(), targetedPod, map[string]string{"Bash": "/bin/bash"}))
	a.waitPod("targeted", "condition=Ready", lineTimeout)
	a.mustCLI("debug", "targeted", "--image=busybox", "--target=app", "-c", "seen", "--", "/bin/sh", "-c", "cat /data/own/f /proc/sys/kernel/hostname")
	a.waitPod("targeted", `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="seen")].state.terminated.exitCode}=0`, lineTimeout)
	if got, want := a.mustCLI("logs", "targeted", "-c", "seen"), "in-the-tmpfs\nset-by-app\n"; got != want {
		t.Errorf("log of the ephemeral container targeting app = %q, want the target's own tmpfs and host name: %q", got, want)
	}
}

// ephemeralSummary is "NAME STATE RESTARTS, ..." of a pod's ephemeral
// container statuses, from its JSON or YAML.
func ephemeralSummary(t *testing.T, doc string) string {
	t.Helper()
	var p struct {
		Status struct {
			EphemeralContainerStatuses []struct {
				Name         string                     `json:"name"`
				RestartCount int                        `json:"restartCount"`
				State        map[string]json.RawMessage `json:"state"`
			} `json:"ephemeralContainerStatuses"`
		} `json:"status"`
	}
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, cs := range p.Status.EphemeralContainerStatuses {
		state := ""
		for k := range cs.State {
			state = k
		}
		parts = append(parts, fmt.Sprintf("%s %s %d", cs.Name, state, cs.RestartCount))
	}
	return strings.Join(parts, ", ")
}
