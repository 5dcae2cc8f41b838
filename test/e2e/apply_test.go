package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// churnPod is version {{.Version}} of pod churn: a label and the
// container's output change with it; the container exits at once on
// SIGTERM.
const churnPod = `
apiVersion: v1
kind: Pod
metadata:
  name: churn
  labels: {version: "{{.Version}}"}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo version {{.Version}}; while true; do sleep 100 & wait; done"]
`

// TestApplyChangedSpecConfigured applies changed specs of one pod in quick
// succession, each while the pods before it may still be terminating or
// being replaced: every one answers configured (never that the pod is not
// found), the last one runs, and applying it again is unchanged.
func TestApplyChangedSpecConfigured(t *testing.T) {
	a := startAgent(t)
	a.pods = append(a.pods, "churn")
	apply := func(version int, want string) {
		t.Helper()
		manifest := writeManifest(t, t.TempDir(), churnPod, map[string]string{"Bash": "/bin/bash", "Version": strconv.Itoa(version)})
		out, err := a.cli("apply", "-f", manifest)
		if err != nil {
			t.Fatalf("apply of version %d: %v", version, err)
		}
		if got := strings.TrimSpace(out); got != "pod/churn "+want {
			t.Fatalf("apply of version %d: %q, want %q", version, got, "pod/churn "+want)
		}
	}
	apply(1, "created")
	a.waitPod("churn", "jsonpath={.status.phase}=Running", lineTimeout)
	const last = 6
	for v := 2; v <= last; v++ {
		apply(v, "configured")
	}
	apply(last, "unchanged")
	// A pod replaced while its container starts ends once the start is
	// cut short, which on the process runtime may take the shim's 10 s
	// abort timeout.
	a.waitPod("churn", "jsonpath={.metadata.labels.version}="+strconv.Itoa(last), 45*time.Second)
	a.waitPod("churn", "jsonpath={.status.phase}=Running", lineTimeout)
	if out := a.mustCLI("get", "pods", "-o", "name"); strings.TrimSpace(out) != "pod/churn" {
		t.Errorf("get pods: %q, want the one pod churn", out)
	}
}
