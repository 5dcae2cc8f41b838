package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// timelinePod's sidecar fails once, then runs; at its delete the two
// defer containers run, then the main container and the sidecar stop.
const timelinePod = `
apiVersion: v1
kind: Pod
metadata:
  name: timeline
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[
      {"name": "upload", "image": "busybox", "command": ["/bin/sh", "-c", "sleep 0.2"]},
      {"name": "notify", "image": "busybox", "command": ["/bin/sh", "-c", "echo done"]}]'
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: proxy
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "if [ -e {{.Flag}} ]; then sleep 100 & wait; else touch {{.Flag}}; exit 1; fi"]
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "sleep 100 & wait"]
`

// TestTimelineOfDeletedPod: podward timeline draws a pod that ran under
// podward serve and was deleted — the sidecar's two instances, the main
// container, both defer containers, the termination request — in the
// terminal's rows and as SVG.
func TestTimelineOfDeletedPod(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t)
	a.apply("timeline", writeManifest(t, dir, timelinePod, map[string]string{"Flag": dir + "/proxy-failed-once"}))
	a.waitPod("timeline", "jsonpath={.status.initContainerStatuses[0].restartCount}=1", 30*time.Second)
	a.waitPod("timeline", "condition=Ready", 30*time.Second)
	a.mustCLI("delete", "pod", "timeline", "--timeout", "30s")
	if _, err := a.cli("get", "pod", "timeline"); err == nil {
		t.Fatal("the deleted pod is still served")
	}

	out := a.mustCLI("timeline", "pod/timeline", "--width", "100")
	t.Logf("podward timeline:\n%s", out)
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "pod default/timeline (uid ") || !strings.HasSuffix(lines[0], ", removed") {
		t.Errorf("title %q", lines[0])
	}
	var rows []string
	for _, ln := range lines {
		if m := regexp.MustCompile(`^(init|sidecar|main|defer) +(\S+) +#(\d+) [ █▒!◆✕│┆]+ (exit \d+.*|running|stopping)$`).FindStringSubmatch(ln); m != nil {
			rows = append(rows, m[1]+" "+m[2]+" #"+m[3]+": "+m[4])
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^sidecar proxy #0: exit 1$`),
		regexp.MustCompile(`^sidecar proxy #1: exit (0|143), after SIGTERM$`),
		regexp.MustCompile(`^main app #0: exit (0|143), after SIGTERM$`),
		regexp.MustCompile(`^defer upload #0: exit 0$`),
		regexp.MustCompile(`^defer notify #0: exit 0$`),
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %q, want %d", rows, len(want))
	}
	for i, w := range want {
		if !w.MatchString(rows[i]) {
			t.Errorf("row %d: %q, want %s", i, rows[i], w)
		}
	}
	if !regexp.MustCompile(`(?m)^│ \+\S+ termination requested \(Deleted\)$`).MatchString(out) {
		t.Errorf("no termination request:\n%s", out)
	}

	svg := a.mustCLI("timeline", "pod/timeline", "-o", "svg")
	for _, want := range []string{`<svg xmlns="http://www.w3.org/2000/svg"`, `>sidecar proxy  #1</text>`, `>defer   notify #0</text>`, "termination requested (Deleted)", "</svg>\n"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG has no %q", want)
		}
	}
}
