package e2e

import (
	"path/filepath"
	"testing"
)

// rulesPod's worker exits 42 on its first two runs and 0 on its third; the
// pod's policy and its own are Never, but its rule restarts it on 42. Its
// defer container reports the runs it saw.
const rulesPod = `
apiVersion: v1
kind: Pod
metadata:
  name: rules
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "report", "image": "bash", "command": ["/bin/bash", "-c", "echo report after run $(cat {{.Runs}})"]}]
spec:
  restartPolicy: Never
  containers:
  - name: worker
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["n=$(( $(cat {{.Runs}} 2>/dev/null || echo 0) + 1 )); echo $n > {{.Runs}}; echo run $n; [ $n -ge 3 ] || exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes:
        operator: In
        values: [42]
`

// TestRestartRuleRestartsInPlace: a container whose restart rule matches its
// exit code is restarted in place although the pod's restartPolicy is Never
// (KEP-5307; the kubelet's pkg/api/v1/pod/util.go, ContainerShouldRestart);
// the pod goes on, so its defer container runs once, after the last run, and
// the pod Succeeds with the third run's exit 0.
func TestRestartRuleRestartsInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, rulesPod, map[string]string{"Runs": filepath.Join(dir, "runs")})
	r := run(t, "-f", manifest, "--backoff-base", "200ms")
	r.assertCode(t, 0)
	for _, n := range []string{"1", "2", "3"} {
		r.mustFind(t, output("worker", "run "+n))
	}
	if got := r.count(output("report", "report after run 3")); got != 1 {
		t.Errorf("the defer container reported %d times after run 3, want once; stdout:\n%s", got, r.stdout)
	}
	if i := r.index(re(`^report +\| report after run [12]$`)); i >= 0 {
		t.Errorf("the defer container ran before the pod ended: %q", r.lines[i].text)
	}
	r.assertBefore(t, [2]matcher{output("worker", "run 3"), output("report", "report after run 3")})
	if last := r.lines[len(r.lines)-1].text; last != "podward: pod/rules Succeeded" {
		t.Errorf("last line %q, want %q; stdout:\n%s", last, "podward: pod/rules Succeeded", r.stdout)
	}
}
