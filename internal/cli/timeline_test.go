package cli

import (
	"regexp"
	"strings"
	"testing"
)

const timelineManifest = `apiVersion: v1
kind: Pod
metadata:
  name: tl
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name":"upload","image":"busybox","command":["/bin/sh","-c","echo uploading"]}]'
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "sleep 100 & wait"]
`

// TestTimeline draws a pod that ran and was deleted, from the agent's
// API: in the terminal's rows and as SVG, also once the pod is gone.
func TestTimeline(t *testing.T) {
	e := newEnv(t)
	e.ok("apply", "-f", e.manifest("tl.yaml", timelineManifest))
	e.ok("wait", "pod/tl", "--for=condition=Ready", "--timeout", "60s")
	r := e.ok("timeline", "pod/tl", "--width", "80")
	if !regexp.MustCompile(`(?m)^main    app #0 +█+ running$`).MatchString(r.out) || !strings.Contains(r.out, ", still running") {
		t.Fatalf("timeline of a running pod:\n%s", r)
	}
	e.ok("delete", "pod", "tl")
	r = e.ok("timeline", "tl", "--width", "80")
	lines := strings.Split(r.out, "\n")
	if !strings.HasPrefix(lines[0], "pod default/tl (uid ") || !strings.HasSuffix(lines[0], ", removed") {
		t.Errorf("title: %q", lines[0])
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^main    app    #0 +█[█▒◆ ]* exit (0|143), after SIGTERM$`),
		regexp.MustCompile(`(?m)^defer   upload #0 [ │]*█+ * exit 0$`),
		regexp.MustCompile(`(?m)^│ \+\S+ termination requested \(Deleted\)$`),
		regexp.MustCompile(`(?m)^┆ \+\S+ deadline \(5s grace period\), after the end$`),
	} {
		if !want.MatchString(r.out) {
			t.Errorf("timeline lacks %s:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "\x1b[") {
		t.Errorf("colour to a file:\n%q", r.out)
	}
	r = e.ok("timeline", "pod", "tl", "-o", "svg")
	if !strings.HasPrefix(r.out, "<svg xmlns=\"http://www.w3.org/2000/svg\"") || !strings.Contains(r.out, ">defer   upload #0</text>") {
		t.Errorf("svg:\n%s", r.out)
	}

	if r := e.run("timeline", "pod/nope"); r.code != 1 || r.err != "Error from server (NotFound): pods \"nope\" not found\n" {
		t.Errorf("an unknown pod:\n%s", r)
	}
	for _, args := range [][]string{{"timeline"}, {"timeline", "a", "b"}, {"timeline", "tl", "-o", "png"}, {"timeline", "deploy/tl"}} {
		if r := e.run(args...); r.code != ExitBadInput {
			t.Errorf("%q: exit %d, want %d:\n%s", args, r.code, ExitBadInput, r)
		}
	}
}
