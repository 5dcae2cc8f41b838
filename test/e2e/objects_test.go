package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// objectsFile is a ConfigMap, a Secret and the Pod beside them, the pod
// first: the order of a file does not matter.
const objectsFile = `apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: MODE, level: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: kubernetes.io/basic-auth
stringData: {username: admin, password: hunter22}
`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigMapsAndSecrets applies a file of a ConfigMap, a Secret and a
// Pod to `podward serve`: the objects go first, in kubectl's words; get,
// describe and delete show them as kubectl; a changed ConfigMap is
// configured, an unchanged file unchanged.
func TestConfigMapsAndSecrets(t *testing.T) {
	a := startAgent(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "app.yaml", strings.Replace(objectsFile, "MODE", "fast", 1))
	a.pods = append(a.pods, "reader")
	if out := a.mustCLI("apply", "-f", file); out != "configmap/settings created\nsecret/creds created\npod/reader created\n" {
		t.Fatalf("first apply: %q", out)
	}
	if out := a.mustCLI("apply", "-f", file); out != "configmap/settings unchanged\nsecret/creds unchanged\npod/reader unchanged\n" {
		t.Fatalf("second apply: %q", out)
	}
	changed := writeFile(t, dir, "changed.yaml", strings.Replace(objectsFile, "MODE", "slow", 1))
	if out := a.mustCLI("apply", "-f", changed); out != "configmap/settings configured\nsecret/creds unchanged\npod/reader unchanged\n" {
		t.Fatalf("changed apply: %q", out)
	}

	if out := a.mustCLI("get", "cm"); !regexp.MustCompile(`^NAME +DATA +AGE\nsettings +2 +\d+s\n$`).MatchString(out) {
		t.Errorf("get cm: %q", out)
	}
	if out := a.mustCLI("get", "secrets"); !regexp.MustCompile(`^NAME +TYPE +DATA +AGE\ncreds +kubernetes.io/basic-auth +2 +\d+s\n$`).MatchString(out) {
		t.Errorf("get secrets: %q", out)
	}
	if out := a.mustCLI("get", "configmap", "settings", "-o", "jsonpath={.data.mode}"); out != "slow" {
		t.Errorf("jsonpath: %q", out)
	}
	out := a.mustCLI("get", "secret", "creds", "-o", "yaml")
	if !strings.Contains(out, "password: aHVudGVyMjI=") || strings.Contains(out, "hunter22") {
		t.Errorf("get secret -o yaml shows no base64 data:\n%s", out)
	}
	out = a.mustCLI("describe", "secret", "creds")
	if !strings.Contains(out, "password:  8 bytes\n") || strings.Contains(out, "hunter22") {
		t.Errorf("describe secret:\n%s", out)
	}
	if out := a.mustCLI("describe", "cm", "settings"); !strings.Contains(out, "mode:\n----\nslow\n") {
		t.Errorf("describe cm:\n%s", out)
	}

	if out := a.mustCLI("delete", "cm", "settings"); out != "configmap \"settings\" deleted\n" {
		t.Errorf("delete: %q", out)
	}
	if _, err := a.cli("get", "cm", "settings"); err == nil || !strings.Contains(err.Error(), `configmaps "settings" not found`) {
		t.Errorf("get after delete: %v", err)
	}
}

// TestConfigMapsAndSecretsSurviveRestart stops the agent and starts it
// again on its state: the objects applied are still there, and an
// immutable one still refuses a change.
func TestConfigMapsAndSecretsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	a := startAgentIn(t, dir)
	file := writeFile(t, t.TempDir(), "objects.yaml", `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: kept, namespace: team}, immutable: true, data: {a: "1"}}
- {apiVersion: v1, kind: Secret, metadata: {name: token}, stringData: {t: abc}}
`)
	if out := a.mustCLI("apply", "-f", file); out != "configmap/kept created\nsecret/token created\n" {
		t.Fatalf("apply: %q", out)
	}
	a.stop()

	b := startAgentIn(t, dir)
	if out := b.mustCLI("get", "cm", "-A", "-o", "name"); out != "configmap/kept\n" {
		t.Errorf("config maps after a restart: %q", out)
	}
	if out := b.mustCLI("get", "secret", "token", "-o", "jsonpath={.data.t}"); out != "YWJj" {
		t.Errorf("secret after a restart: %q", out)
	}
	if out := b.mustCLI("apply", "-f", file); out != "configmap/kept unchanged\nsecret/token unchanged\n" {
		t.Errorf("apply after a restart: %q", out)
	}
	changed := writeFile(t, t.TempDir(), "changed.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, namespace: team}\nimmutable: true\ndata: {a: \"2\"}\n")
	if _, err := b.cli("apply", "-f", changed); err == nil || !strings.Contains(err.Error(), "field is immutable when `immutable` is set") {
		t.Errorf("change of an immutable ConfigMap after a restart: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "root", "state.db"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state.db: %v, mode %v; want 0600 (it holds Secrets)", err, fi.Mode().Perm())
	}
}

// TestRunTakesObjects runs a file of a ConfigMap, a Secret and a Pod in
// the foreground: run accepts it, holds the objects for the pod, and the
// pod runs; a file of objects alone is refused, naming the reason.
func TestRunTakesObjects(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "app.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: x}
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo ran-with-objects"]
`)
	r := run(t, "-f", file)
	r.assertCode(t, 0)
	r.mustFind(t, contains("ran-with-objects"))

	only := writeFile(t, dir, "only.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
	r = run(t, "-f", only)
	r.assertCode(t, 2)
	if !strings.Contains(r.stderr, "no pod manifest in input") {
		t.Errorf("a file without a pod: stderr %q", r.stderr)
	}
	bad := writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {\"bad key\": x}\n---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: bash}]}\n")
	r = run(t, "-f", bad)
	r.assertCode(t, 2)
	if !strings.Contains(r.stderr, `data[bad key]: Invalid value: "bad key"`) {
		t.Errorf("an invalid ConfigMap: stderr %q", r.stderr)
	}
}

// TestStaticFileTakesObjects starts serve on a manifest directory whose
// file holds a ConfigMap and a Secret after its pod: they are applied
// before the pod, and kept in the agent.
func TestStaticFileTakesObjects(t *testing.T) {
	manifests := t.TempDir()
	writeFile(t, manifests, "app.yaml", `apiVersion: v1
kind: Pod
metadata: {name: static-once}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "exit 0"]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: static-settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: static-creds}
stringData: {password: x}
`)
	a := startAgent(t, "--manifests", manifests)
	a.pods = append(a.pods, "static-once")
	// The directory is read after the agent serves: its pod's first event
	// says it was created.
	a.waitEvent("static-once", "Normal Scheduled", lineTimeout)
	a.waitPod("static-once", "jsonpath={.status.phase}=Succeeded", lineTimeout)
	if out := a.mustCLI("get", "cm", "static-settings", "-o", "jsonpath={.data.mode}"); out != "fast" {
		t.Errorf("config map of the static file: %q", out)
	}
	if out := a.mustCLI("get", "secrets", "-o", "name"); out != "secret/static-creds\n" {
		t.Errorf("secrets: %q", out)
	}
}
