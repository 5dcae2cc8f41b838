package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// configPod is a ConfigMap, a Secret and a pod that reads them every way a
// pod can: envFrom with a prefix, secretKeyRef, resourceFieldRef and
// fieldRef in its environment; a configMap volume, a secret volume (mode
// 0400, on a tmpfs) and a projected volume of a downward API file and one
// key of the ConfigMap. It prints what it got, then a line each time the
// mounted greeting changes. {{.Greeting}} is the ConfigMap's greeting.
const configPod = `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {greeting: "{{.Greeting}}", mode: fast, data-1: value-1}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata:
  name: config
  labels: {app: config}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args:
    - |
      echo "env greeting=$CFG_greeting mode=$CFG_mode password=$PASSWORD memory=${MEMORY_MI}Mi pod=$POD_NAME"
      echo "env no shell name: $(env | grep '^CFG_data-1=')"
      echo "secret mode=$(stat -L -c %a {{.Dir}}/sec/password) fs=$(awk '$2 == "{{.Dir}}/sec" {print $3}' /proc/self/mounts)"
      echo "projected labels=$(cat {{.Dir}}/info/labels) mode=$(cat {{.Dir}}/info/mode)"
      last=
      while true; do
        g=$(cat {{.Dir}}/cfg/greeting)
        if [ "$g" != "$last" ]; then echo "mounted greeting=$g"; last=$g; fi
        sleep 0.1
      done
    envFrom: [{prefix: CFG_, configMapRef: {name: app-config}}]
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: app-secret, key: password}}}
    - {name: MEMORY_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    resources: {limits: {memory: 64Mi}}
    volumeMounts:
    - {name: cfg, mountPath: "{{.Dir}}/cfg"}
    - {name: sec, mountPath: "{{.Dir}}/sec"}
    - {name: info, mountPath: "{{.Dir}}/info"}
  volumes:
  - {name: cfg, configMap: {name: app-config}}
  - {name: sec, secret: {secretName: app-secret, defaultMode: 0400}}
  - name: info
    projected:
      sources:
      - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
      - configMap: {name: app-config, items: [{key: mode, path: mode}]}
`

// TestPodReadsConfigMapsAndSecrets: a file of a ConfigMap, a Secret and the pod
// that reads them runs with `podward apply -f` on both runtimes (a key
// that is no shell name, data-1, is a variable too: Kubernetes' relaxed
// rule); the pod
// sees each value where the kubelet puts it, and a changed ConfigMap,
// applied again, reaches the mounted file of the running pod within a few
// seconds (the kubelet: up to about a minute).
func TestPodReadsConfigMapsAndSecrets(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		dir := t.TempDir()
		a := startAgent(t, rt.Args...)
		render := func(greeting string) string {
			return rt.manifest(t, dir, configPod, map[string]string{"Dir": dir, "Greeting": greeting})
		}
		a.apply("config", render("hello"))
		a.waitPod("config", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)

		logs := a.podwardCmd("logs", "-f", "config")
		logged := &bintest.Ticks{}
		logs.Stdout = logged
		if err := logs.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = logs.Process.Kill()
			_ = logs.Wait()
		})
		for _, want := range []string{
			"env greeting=hello mode=fast password=s3cret memory=64Mi pod=config",
			"env no shell name: CFG_data-1=value-1",
			"secret mode=400 fs=tmpfs",
			`projected labels=app="config" mode=fast`,
			"mounted greeting=hello",
		} {
			if !logged.Wait(want, 1, lineTimeout) {
				t.Fatalf("the pod did not print %q; it printed:\n%s", want, logged.String())
			}
		}

		out := a.mustCLI("apply", "-f", render("bonjour"))
		for _, want := range []string{"configmap/app-config configured", "secret/app-secret unchanged", "pod/config unchanged"} {
			if !strings.Contains(out, want) {
				t.Errorf("podward apply said %q, want a line %q", out, want)
			}
		}
		start := time.Now()
		if !logged.Wait("mounted greeting=bonjour", 1, 10*time.Second) {
			t.Fatalf("the updated ConfigMap did not reach the mounted file within 10s; the pod printed:\n%s", logged.String())
		}
		t.Logf("the update reached the mounted file %v after the apply", time.Since(start).Round(time.Millisecond))
		// The environment is not updated (as Kubernetes): the container
		// still runs, its env as it started.
		if st := a.getPod("config").container(t, "app"); st.RestartCount != 0 {
			t.Errorf("the container restarted on the update: %s", st)
		}
	})
}

// lateObjectPods are three pods that reference the ConfigMap "late",
// which does not exist yet: one through its environment, one through a
// volume, one through both with optional: true.
const lateObjectPods = `
apiVersion: v1
kind: Pod
metadata: {name: late-env}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo value=$VALUE; exec sleep {{.Marker}}"]
    env: [{name: VALUE, valueFrom: {configMapKeyRef: {name: late, key: value}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: late-volume}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "cat {{.Dir}}/v/value; echo; exec sleep {{.Marker}}"]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}/v"}]
  volumes: [{name: v, configMap: {name: late}}]
---
apiVersion: v1
kind: Pod
metadata: {name: late-optional}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo value=$VALUE; exec sleep {{.Marker}}"]
    env: [{name: VALUE, valueFrom: {configMapKeyRef: {name: late, key: value, optional: true}}}]
    volumeMounts: [{name: v, mountPath: "{{.Dir}}/v"}]
  volumes: [{name: v, configMap: {name: late, optional: true}}]
`

const lateConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: late}
data: {value: arrived}
`

// TestMissingObjectsWait: a pod that needs a ConfigMap that does not exist
// does not fail: the container that reads it through its environment
// waits in CreateContainerConfigError with the kubelet's message, the pod
// that mounts it waits with a FailedMount event naming it, and a pod whose
// references are optional starts without it. Once the ConfigMap is
// applied, the waiting pods start and read it.
func TestMissingObjectsWait(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		dir := t.TempDir()
		a := startAgent(t, rt.Args...)
		a.pods = append(a.pods, "late-env", "late-volume")
		a.apply("late-optional", rt.manifest(t, dir, lateObjectPods, map[string]string{"Dir": dir, "Marker": newSleepMarker()}))

		a.waitPod("late-optional", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		a.waitPod("late-env", "jsonpath={.status.containerStatuses[0].state.waiting.reason}=CreateContainerConfigError", exitTimeout)
		st := a.getPod("late-env").container(t, "app")
		if st.State.Waiting == nil || st.State.Waiting.Message != `configmap "late" not found` {
			t.Errorf("late-env's container: %s, want waiting with the message %q", st, `configmap "late" not found`)
		}
		a.waitEvent("late-volume", `Warning FailedMount  MountVolume.SetUp failed for volume "v" : configmap "late" not found`, exitTimeout)
		if p := a.getPod("late-volume"); p.Status.Phase != "Pending" {
			t.Errorf("late-volume is %s, want Pending while its volume cannot be set up", p.Status.Phase)
		}

		cm := filepath.Join(dir, "late.yaml")
		if err := os.WriteFile(cm, []byte(lateConfigMap), 0o644); err != nil {
			t.Fatal(err)
		}
		a.mustCLI("apply", "-f", cm)
		a.waitPod("late-env", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		a.waitPod("late-volume", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		for _, name := range []string{"late-env", "late-volume"} {
			out := a.mustCLI("logs", name)
			if !strings.Contains(out, "arrived") {
				t.Errorf("pod %s printed %q, want the ConfigMap's value", name, out)
			}
		}
		out := a.mustCLI("get", "configmap", "late")
		if f := strings.Fields(out); len(f) < 6 || strings.Join(f[:3], " ") != "NAME DATA AGE" || f[3] != "late" || f[4] != "1" {
			t.Errorf("podward get configmap late:\n%s\nwant kubectl's columns NAME DATA AGE", out)
		}
	})
}
