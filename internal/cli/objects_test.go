package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const objectsManifest = `apiVersion: v1
kind: Secret
metadata: {name: creds}
type: kubernetes.io/basic-auth
stringData: {username: admin, password: s3cret-value}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: hello, mode: fast}
binaryData: {blob: AAEC}
`

func TestObjectsApplyGetDescribeDelete(t *testing.T) {
	e := newEnv(t)
	file := e.manifest("objects.yaml", objectsManifest)
	// Objects are applied before pods, in the file's order.
	if r := e.ok("apply", "-f", file); r.out != "secret/creds created\nconfigmap/cfg created\n" {
		t.Fatalf("first apply:\n%s", r)
	}
	if r := e.ok("apply", "-f", file); r.out != "secret/creds unchanged\nconfigmap/cfg unchanged\n" {
		t.Fatalf("second apply:\n%s", r)
	}
	changed := e.manifest("changed.yaml", strings.Replace(objectsManifest, "mode: fast", "mode: slow", 1))
	if r := e.ok("apply", "-f", changed); r.out != "secret/creds unchanged\nconfigmap/cfg configured\n" {
		t.Fatalf("changed apply:\n%s", r)
	}

	for _, res := range []string{"configmaps", "configmap", "cm"} {
		r := e.ok("get", res)
		if !regexp.MustCompile(`^NAME +DATA +AGE\ncfg +3 +\d+s\n$`).MatchString(r.out) {
			t.Fatalf("get %s:\n%s", res, r)
		}
	}
	r := e.ok("get", "secrets", "-A")
	if !regexp.MustCompile(`^NAMESPACE +NAME +TYPE +DATA +AGE\ndefault +creds +kubernetes.io/basic-auth +2 +\d+s\n$`).MatchString(r.out) {
		t.Fatalf("get secrets -A:\n%s", r)
	}
	if r = e.ok("get", "secret/creds", "-o", "name"); r.out != "secret/creds\n" {
		t.Fatalf("-o name:\n%s", r)
	}
	// -o wide has kubectl's same columns.
	if r = e.ok("get", "secrets", "-o", "wide"); !strings.HasPrefix(r.out, "NAME ") || !strings.Contains(r.out, "kubernetes.io/basic-auth") {
		t.Fatalf("-o wide:\n%s", r)
	}
	if r = e.run("get", "cm", "-w"); r.code != ExitBadInput || !strings.Contains(r.err, "cannot watch configmaps") {
		t.Fatalf("get cm -w:\n%s", r)
	}
	if r = e.run("get", "cm/cfg", "secret/creds"); r.code != ExitBadInput || !strings.Contains(r.err, `"secret/creds" is not a configmap`) {
		t.Fatalf("mixed kinds:\n%s", r)
	}
	if r = e.ok("get", "cm", "cfg", "-o", "jsonpath={.data.mode}"); r.out != "slow" {
		t.Fatalf("-o jsonpath:\n%s", r)
	}
	// -o yaml shows the data in base64, as kubectl.
	r = e.ok("get", "secret", "creds", "-o", "yaml")
	if !strings.Contains(r.out, "kind: Secret\n") || !strings.Contains(r.out, "  password: czNjcmV0LXZhbHVl\n") || strings.Contains(r.out, "s3cret-value") {
		t.Fatalf("-o yaml:\n%s", r)
	}
	var list struct {
		Kind  string
		Items []v1.ConfigMap
	}
	r = e.ok("get", "cm", "-o", "json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Kind != "ConfigMap" {
		t.Fatalf("-o json: %v\n%s", err, r)
	}

	r = e.ok("describe", "secret", "creds")
	const wantSecret = "Name:         creds\nNamespace:    default\nLabels:       <none>\nAnnotations:  <none>\n\nType:  kubernetes.io/basic-auth\n\nData\n====\npassword:  12 bytes\nusername:  5 bytes\n"
	if r.out != wantSecret {
		t.Fatalf("describe secret:\n%s\nwant:\n%s", r.out, wantSecret)
	}
	r = e.ok("describe", "cm/cfg")
	const wantCM = "Name:         cfg\nNamespace:    default\nLabels:       <none>\nAnnotations:  <none>\n\nData\n====\ngreeting:\n----\nhello\n\nmode:\n----\nslow\n\n\nBinaryData\n====\nblob: 3 bytes\n\nEvents:  <none>\n"
	if r.out != wantCM {
		t.Fatalf("describe configmap:\n%q\nwant:\n%q", r.out, wantCM)
	}

	if r = e.ok("delete", "cm", "cfg"); r.out != "configmap \"cfg\" deleted\n" {
		t.Fatalf("delete:\n%s", r)
	}
	r = e.run("get", "cm", "cfg")
	if r.code != ExitFailed || !strings.Contains(r.err, `configmaps "cfg" not found`) {
		t.Fatalf("get after delete:\n%s", r)
	}
	if r = e.run("get", "cm"); r.code != 0 || r.err != "No resources found in default namespace.\n" {
		t.Fatalf("get of none:\n%s", r)
	}
	if r = e.ok("delete", "secret", "creds", "nope", "--ignore-not-found"); r.out != "secret \"creds\" deleted\n" {
		t.Fatalf("delete --ignore-not-found:\n%s", r)
	}
}

func TestApplyObjectErrors(t *testing.T) {
	e := newEnv(t)
	immutable := e.manifest("imm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fixed}\nimmutable: true\ndata: {a: \"1\"}\n")
	e.ok("apply", "-f", immutable)
	changed := e.manifest("imm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fixed}\nimmutable: true\ndata: {a: \"2\"}\n")
	r := e.run("apply", "-f", changed)
	if r.code != ExitBadInput || !strings.Contains(r.err, "data: Forbidden: field is immutable when `immutable` is set") {
		t.Fatalf("immutable change:\n%s", r)
	}
	bad := e.manifest("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {\"bad key\": x}\n")
	r = e.run("apply", "-f", bad)
	if r.code != ExitBadInput || !strings.Contains(r.err, `data[bad key]: Invalid value: "bad key"`) {
		t.Fatalf("bad key:\n%s", r)
	}
}

func TestDeleteFile(t *testing.T) {
	e := newEnv(t)
	file := e.manifest("all.yaml", objectsManifest+"---\n"+webPod)
	if r := e.ok("apply", "-f", file); r.out != "secret/creds created\nconfigmap/cfg created\npod/web created\n" {
		t.Fatalf("apply:\n%s", r)
	}
	r := e.ok("delete", "-f", file, "--grace-period", "1")
	if r.out != "pod \"web\" deleted\nsecret \"creds\" deleted\nconfigmap \"cfg\" deleted\n" {
		t.Fatalf("delete -f:\n%s", r)
	}
	if r = e.run("get", "secrets"); r.err != "No resources found in default namespace.\n" {
		t.Fatalf("secrets after delete -f:\n%s", r)
	}
	if r = e.run("delete", "-f", file, "--wait=false"); r.code != ExitFailed || !strings.Contains(r.err, `configmaps "cfg" not found`) {
		t.Fatalf("second delete -f:\n%s", r)
	}
	if r = e.run("delete", "cm", "x", "-f", file); r.code != ExitBadInput {
		t.Fatalf("delete with -f and names:\n%s", r)
	}
}
