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
