package e2e

import (
	"os"
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
  restartPolicy: Never
  terminationGracePeriodSeconds: 3
  volumes:
  - name: settings
    configMap: {name: app-settings, optional: {{.Optional}}}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["ls -A /etc/app | grep -v '^[.][.]' || echo empty"]
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
		a.waitPod("optional", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}=0", exitTimeout)
		if got := a.mustCLI("logs", "optional"); got != "empty\n" {
			t.Errorf("logs %q, want the optional volume empty", got)
		}
	})
}

// objectVolumesFile is a ConfigMap, a Secret and a pod that mounts them,
// waits until the ConfigMap's mode says fast and prints what it read.
const objectVolumesFile = `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-settings}
data: {mode: "{{.Mode}}"}
---
apiVersion: v1
kind: Secret
metadata: {name: app-creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 3
  volumes:
  - {name: settings, configMap: {name: app-settings}}
  - {name: creds, secret: {secretName: app-creds, defaultMode: 0400}}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["cat /etc/creds/password; echo; until grep -q fast /etc/app/mode; do sleep 0.05; done; echo mode fast"]
    volumeMounts:
    - {name: settings, mountPath: /etc/app}
    - {name: creds, mountPath: /etc/creds}
`

// TestObjectVolumes: a pod reads its ConfigMap and Secret volumes, and a
// changed ConfigMap reaches it while it runs; a pod applied before its
// ConfigMap waits for it and starts once it is applied.
func TestObjectVolumes(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		a := startAgent(t, rt.Args...)
		a.pods = append(a.pods, "reader", "waits")
		a.mustCLI("apply", "-f", rt.manifest(t, t.TempDir(), objectVolumesFile, map[string]string{"Mode": "slow"}))
		a.waitPod("reader", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		out := a.mustCLI("apply", "-f", rt.manifest(t, t.TempDir(), objectVolumesFile, map[string]string{"Mode": "fast"}))
		if !strings.Contains(out, "configmap/app-settings configured") {
			t.Fatalf("apply of the changed ConfigMap: %q", out)
		}
		a.waitPod("reader", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}=0", lineTimeout)
		if got, want := a.mustCLI("logs", "reader"), "s3cret\nmode fast\n"; got != want {
			t.Errorf("logs %q, want %q", got, want)
		}

		a.apply("waits", rt.manifest(t, t.TempDir(), strings.ReplaceAll(missingConfigMapPod, "app-settings", "late"), map[string]string{"Name": "waits", "Optional": "false"}))
		a.waitEvent("waits", `Warning FailedMount  MountVolume.SetUp failed for volume "settings" : configmap "late" not found`, lineTimeout)
		a.mustCLI("apply", "-f", writeManifest(t, t.TempDir(), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\ndata: {k: v}\n", nil))
		a.waitPod("waits", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}=0", lineTimeout)
		if got := a.mustCLI("logs", "waits"); got != "k\n" {
			t.Errorf("logs %q, want the ConfigMap's key", got)
		}
	})
}

// subPathPod mounts a subPath that does not exist yet of an emptyDir on
// disk and of one on a tmpfs, with a fsGroup and a user that is not root,
// as the upstream spec "EmptyDir volumes when FSGroup is specified
// nonexistent volume subPath should have the correct mode and owner using
// FSGroup" does, and prints each one's mode, owner and group, and the
// group of a file it creates there. The mount paths are this test's own
// (see secPod).
const subPathPod = `
apiVersion: v1
kind: Pod
metadata:
  name: subpath-fsgroup
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1001, fsGroup: 123}
  volumes:
  - {name: disk, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory}}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["for v in disk mem; do d={{.Dir}}-$v; touch $d/f && echo $v=$(stat -c '%A %u %g' $d) file-group=$(stat -c %g $d/f); done"]
    volumeMounts:
    - {name: disk, mountPath: "{{.Dir}}-disk", subPath: test-sub}
    - {name: mem, mountPath: "{{.Dir}}-mem", subPath: test-sub}
`

// TestSubPathModeWithFSGroup: a subPath that podward creates in an
// emptyDir has the volume's own mode, as the kubelet gives it: writable by
// every user of the pod, owned by root and the fsGroup, setgid so that the
// files made in it are the fsGroup's, and sticky on a tmpfs (whose root
// the kubelet leaves 1777): drwxrwsrwt there, drwxrwsrwx on disk.
func TestSubPathModeWithFSGroup(t *testing.T) {
	needRoot(t)
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		r := rt.run(t, "-f", rt.manifest(t, t.TempDir(), subPathPod, map[string]string{
			"Dir": dataPath("subpath-" + rt.Name),
		}))
		r.assertCode(t, 0)
		r.mustFind(t, output("app", "disk=drwxrwsrwx 0 123 file-group=123"))
		r.mustFind(t, output("app", "mem=drwxrwsrwt 0 123 file-group=123"))
	})
}

// badSubPathExprPods are the upstream specs "Variable Expansion should fail
// substituting values in a volume subpath with backticks" and "... with
// absolute path": a subPathExpr whose variable makes it ".." or an
// absolute path; and, as in "... should verify that a failing subpath
// expansion can be modified during the lifecycle of a container", one
// that refers to a variable whose value is empty (an annotation the pod
// does not have).
const badSubPathExprPods = `
apiVersion: v1
kind: Pod
metadata:
  name: subpath-up
spec:
  restartPolicy: Never
  volumes: [{name: v, emptyDir: {}}]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    env: [{name: POD_NAME, value: ".."}]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-up", subPathExpr: "$(POD_NAME)"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath-abs
spec:
  restartPolicy: Never
  volumes: [{name: v, emptyDir: {}}]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    env: [{name: POD_NAME, value: /tmp}]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-abs", subPathExpr: "$(POD_NAME)"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath-unset
spec:
  restartPolicy: Never
  volumes: [{name: v, emptyDir: {}}]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    env:
    - {name: POD_NAME, value: foo}
    - name: ANNOTATION
      valueFrom: {fieldRef: {fieldPath: "metadata.annotations['mysubpath']"}}
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-unset", subPathExpr: "$(ANNOTATION)/$(POD_NAME)"}]
`

// TestSubPathExprConfigError: a subPathExpr that expands to ".." or to an
// absolute path, or refers to an empty variable, does not fail the pod: as the kubelet's makeMounts error
// does, the container waits in CreateContainerConfigError with the
// kubelet's message, its start is tried again (a second Failed event), and
// the pod stays Pending.
func TestSubPathExprConfigError(t *testing.T) {
	needRoot(t)
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		a := startAgent(t, rt.Args...)
		a.pods = append(a.pods, "subpath-abs", "subpath-unset")
		a.apply("subpath-up", rt.manifest(t, t.TempDir(), badSubPathExprPods, map[string]string{"Dir": dataPath("subpathexpr-" + rt.Name)}))
		want := map[string]string{
			"subpath-up":    "unable to provision SubPath `..`: must not contain '..'",
			"subpath-abs":   "error SubPath `/tmp` must not be an absolute path",
			"subpath-unset": "missing value for ANNOTATION",
		}
		for name, msg := range want {
			a.waitConfigErrorRetried(t, name, msg)
		}
	})
}

// waitConfigErrorRetried waits until pod name's container app waits in
// CreateContainerConfigError with msg and no restart, its start is tried
// again (a second Failed event), and the pod is still Pending.
func (a *agent) waitConfigErrorRetried(t *testing.T, name, msg string) {
	t.Helper()
	a.waitPod(name, "jsonpath={.status.containerStatuses[0].state.waiting.reason}=CreateContainerConfigError", exitTimeout)
	if st := a.getPod(name).container(t, "app"); st.State.Waiting == nil || st.State.Waiting.Message != msg || st.RestartCount != 0 {
		t.Errorf("%s's container: %s, want waiting with the message %q, no restart", name, st, msg)
	}
	a.watchEvents(name, "a second start", func(evs []event) bool {
		return countEvents(evs, "Warning Failed spec.containers{app} Error: "+msg) >= 2
	}, exitTimeout)
	if p := a.getPod(name); p.Status.Phase != "Pending" {
		t.Errorf("%s is %s, want Pending", name, p.Status.Phase)
	}
}

// symlinkSubPathPods each have an init container that makes the entry out
// of their emptyDir a symlink to {{.Outside}}, a directory of the host, and
// a container that mounts the emptyDir with subPath out (which exists: the
// kubelet's PrepareSafeSubpath refuses it, "subpath ... not within volume
// path") or out/new (which does not: its SafeMakeDir refuses it).
const symlinkSubPathPods = `
apiVersion: v1
kind: Pod
metadata:
  name: subpath-link
spec:
  restartPolicy: Never
  volumes: [{name: v, emptyDir: {}}]
  initContainers:
  - name: link
    image: bash
    command: ["{{.Bash}}", "-c", "ln -s {{.Outside}} {{.Dir}}-link-init/out"]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-link-init"}]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-link", subPath: out}]
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath-link-new
spec:
  restartPolicy: Never
  volumes: [{name: v, emptyDir: {}}]
  initContainers:
  - name: link
    image: bash
    command: ["{{.Bash}}", "-c", "ln -s {{.Outside}} {{.Dir}}-new-init/out"]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-new-init"}]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}-new", subPath: out/new}]
`

// TestSubPathSymlinkConfigError: a subPath that a symlink, made by an init
// container, leads out of its volume does not fail the pod: as the
// kubelet's makeMounts, the container waits in CreateContainerConfigError
// with the kubelet's message, which names no host path, its start is
// tried again (a second Failed event), the pod stays Pending, and nothing
// is created outside the volume.
func TestSubPathSymlinkConfigError(t *testing.T) {
	needRoot(t)
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		outside := t.TempDir()
		a := startAgent(t, rt.Args...)
		a.pods = append(a.pods, "subpath-link-new")
		a.apply("subpath-link", rt.manifest(t, t.TempDir(), symlinkSubPathPods, map[string]string{
			"Dir": dataPath("subpathlink-" + rt.Name), "Outside": outside,
		}))
		want := map[string]string{
			"subpath-link":     `failed to prepare subPath for volumeMount "v" of container "app"`,
			"subpath-link-new": `failed to create subPath directory for volumeMount "v" of container "app"`,
		}
		for name, msg := range want {
			a.waitConfigErrorRetried(t, name, msg)
		}
		if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
			t.Errorf("outside the volume: %d entries, %v; want none", len(entries), err)
		}
	})
}
