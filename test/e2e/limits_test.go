package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// limitPod is pod {{.Name}}: it runs until {{.Done}} exists, then exits 0
// (restartPolicy Never: the pod then Succeeded). It exits at once on
// SIGTERM.
const limitPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; while [ ! -e {{.Done}} ]; do sleep 0.1; done"]
`

// TestMaxPods: with --max-pods 3 and three pods running, the fourth pod is
// created Failed, with the kubelet's reason and message for a node that
// has no room (pkg/kubelet/lifecycle/predicate.go, OutOfpods; kubelet.go,
// rejectPod) and a warning event; nothing of it runs. A pod that has
// terminated does not count (the kubelet counts active pods): once one of
// the three has Succeeded, the next pod runs.
func TestMaxPods(t *testing.T) {
	a := startAgent(t, "--max-pods", "3")
	dir := t.TempDir()
	apply := func(name string) {
		t.Helper()
		sub := filepath.Join(dir, name)
		mkdirs(t, sub)
		a.apply(name, writeManifest(t, sub, limitPod, map[string]string{
			"Name": name, "Bash": "/bin/bash", "Done": filepath.Join(sub, "done"),
		}))
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		apply(name)
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		a.waitPod(name, "jsonpath={.status.phase}=Running", lineTimeout)
	}

	apply("p4")
	const msg = "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
	a.waitPod("p4", "jsonpath={.status.phase}=Failed", lineTimeout)
	p4 := a.getPod("p4")
	if p4.Status.Reason != "OutOfpods" || p4.Status.Message != "Pod was rejected: "+msg {
		t.Errorf("p4: reason %q message %q, want OutOfpods, %q", p4.Status.Reason, p4.Status.Message, "Pod was rejected: "+msg)
	}
	if len(p4.Status.ContainerStatuses) != 0 {
		t.Errorf("p4 has container statuses, as if it ran: %+v", p4.Status.ContainerStatuses)
	}
	a.waitEvent("p4", "Warning OutOfpods  "+msg, lineTimeout)
	if out := a.mustCLI("get", "pods", "p4"); !strings.Contains(out, "OutOfpods") {
		t.Errorf("get pods shows no OutOfpods:\n%s", out)
	}

	// p1 ends: three pods are active no more.
	touch(t, filepath.Join(dir, "p1", "done"))
	a.waitPod("p1", "jsonpath={.status.phase}=Succeeded", lineTimeout)
	apply("p5")
	a.waitPod("p5", "jsonpath={.status.phase}=Running", lineTimeout)
	apply("p6")
	a.waitPod("p6", "jsonpath={.status.phase}=Failed", lineTimeout)
	if p6 := a.getPod("p6"); p6.Status.Reason != "OutOfpods" {
		t.Errorf("p6: reason %q, want OutOfpods with p2, p3 and p5 running", p6.Status.Reason)
	}

	// A rejected pod is deleted at once, and its name is free.
	a.mustCLI("delete", "pod", "p4", "--timeout", "10s")
	if out, err := a.cli("get", "pod", "p4"); err == nil {
		t.Errorf("p4 still served after its delete:\n%s", out)
	}
}

// TestRunMaxPods: `podward run` admits every pod of its manifest before it
// starts any, so a manifest of more pods than --max-pods is bad input
// (exit 2), each pod beyond the limit named with the kubelet's reason, and
// nothing starts.
func TestRunMaxPods(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	var docs []string
	for i := 1; i <= 3; i++ {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: p%d
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "touch %s"]
`, i, marker))
	}
	manifest := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "-f", manifest, "--max-pods", "2")
	r.assertCode(t, 2)
	want := `document 3: pod "p3": OutOfpods: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2 (--max-pods)`
	if got := problems(r.stderr, manifest); len(got) != 1 || got[0] != want {
		t.Errorf("stderr:\n%s\nwant the one problem:\n%s", r.stderr, want)
	}
	if fileExists(marker) {
		t.Error("a container ran")
	}
	run(t, "-f", manifest, "--max-pods", "3").assertCode(t, 0)
	if !fileExists(marker) {
		t.Error("with room for all three, no container ran")
	}
}
