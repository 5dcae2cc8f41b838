package e2e

import (
	"strings"
	"testing"
)

// podinfoPod mounts its labels (a downwardAPI volume, on disk) and its
// namespace (a projected volume, on a tmpfs) and waits until its labels
// say tier "b".
const podinfoPod = `
apiVersion: v1
kind: Pod
metadata:
  name: podinfo
  labels: {tier: "{{.Tier}}"}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 3
  volumes:
  - name: podinfo
    downwardAPI:
      items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]
  - name: projected
    projected:
      sources:
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["cat /etc/projected/namespace; echo; until grep -q 'tier=\"b\"' /etc/podinfo/labels; do sleep 0.05; done; echo saw-b; if touch /etc/podinfo/x 2>/dev/null; then echo writable; else echo read-only; fi"]
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: projected, mountPath: /etc/projected}
`

// TestDownwardAPIVolumeFollowsLabels: a label change applied to a running
// pod is taken in place (configured, the same UID) and reaches its
// downwardAPI volume, which the container sees while it runs; the
// volumes are read-only.
func TestDownwardAPIVolumeFollowsLabels(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		a := startAgent(t, rt.Args...)
		a.apply("podinfo", rt.manifest(t, t.TempDir(), podinfoPod, map[string]string{"Tier": "a"}))
		a.waitPod("podinfo", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		uid := a.mustCLI("get", "pod", "podinfo", "-o", "jsonpath={.metadata.uid}")
		out := a.mustCLI("apply", "-f", rt.manifest(t, t.TempDir(), podinfoPod, map[string]string{"Tier": "b"}))
		if got := strings.TrimSpace(out); got != "pod/podinfo configured" {
			t.Fatalf("apply of a label change: %q, want configured", got)
		}
		a.waitPod("podinfo", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}=0", lineTimeout)
		if got := a.mustCLI("get", "pod", "podinfo", "-o", "jsonpath={.metadata.uid}"); got != uid || uid == "" {
			t.Errorf("UID %s after the label change, want the pod's own %s (in place)", got, uid)
		}
		if got, want := a.mustCLI("logs", "podinfo"), "default\nsaw-b\nread-only\n"; got != want {
			t.Errorf("logs %q, want %q", got, want)
		}
	})
}

// missingConfigMapPod mounts a ConfigMap that does not exist: required
// (settings) unless Optional.
const missingConfigMapPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - name: settings
    configMap: {name: app-settings, optional: {{.Optional}}}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["ls -A /etc/app | grep -v '^[.][.]' || echo empty; trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
    volumeMounts:
    - {name: settings, mountPath: /etc/app}
`

// TestMissingConfigMapVolume: a pod whose configMap volume's ConfigMap
// does not exist waits in ContainerCreating with the kubelet's FailedMount
// event, where it used to be refused; with optional: true it starts, its
// volume empty.
func TestMissingConfigMapVolume(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		a := startAgent(t, rt.Args...)
		a.apply("waits", rt.manifest(t, t.TempDir(), missingConfigMapPod, map[string]string{"Name": "waits", "Optional": "false"}))
		a.waitEvent("waits", `Warning FailedMount  MountVolume.SetUp failed for volume "settings" : configmap "app-settings" not found`, lineTimeout)
		if p := a.getPod("waits"); p.Status.Phase != "Pending" {
			t.Errorf("phase %s, want Pending", p.Status.Phase)
		}
		a.apply("optional", rt.manifest(t, t.TempDir(), missingConfigMapPod, map[string]string{"Name": "optional", "Optional": "true"}))
		a.waitPod("optional", "condition=Ready", exitTimeout)
		if got := a.mustCLI("logs", "optional"); got != "empty\n" {
			t.Errorf("logs %q, want the optional volume empty", got)
		}
	})
}
