package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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

// restartAllPod restarts in place when train exits 42, which it does on its
// first run. setup, proxy and report count their runs in files; proxy
// ignores SIGTERM, so that the restart lasts the 2 s before its SIGKILL, and
// counts its preStop hook's runs.
const restartAllPod = `
apiVersion: v1
kind: Pod
metadata:
  name: restartall
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "report", "image": "bash", "command": ["/bin/bash", "-c", "echo report >> {{.Dir}}/report.runs"]}]
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  initContainers:
  - name: setup
    image: bash
    command: ["/bin/bash", "-c", "echo setup >> {{.Dir}}/setup.runs"]
  - name: proxy
    image: bash
    restartPolicy: Always
    command: ["/bin/bash", "-c", "trap '' TERM; echo up >> {{.Dir}}/proxy.runs; while true; do sleep 0.1; done"]
    lifecycle:
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo prestop >> {{.Dir}}/proxy.prestop"]}
  containers:
  - name: train
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["n=$(( $(cat {{.Dir}}/train.runs 2>/dev/null || echo 0) + 1 )); echo $n > {{.Dir}}/train.runs; [ $n -ge 2 ] || exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
`

// TestRestartAllContainersInPlace: train's exit 42 matches its
// RestartAllContainers rule (KEP-5532), so the pod restarts in place: the
// AllContainersRestarting condition turns True (the kubelet's reason and
// message, pkg/kubelet/status/generate.go), the sidecar is stopped without
// its preStop hook, the init container runs again, every restart count goes
// up by one; the pod does not end, so the defer container does not run then
// — it runs once, when the pod completes after train's second run.
func TestRestartAllContainersInPlace(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	dir := t.TempDir()
	a.apply("restartall", writeManifest(t, dir, restartAllPod, map[string]string{"Dir": dir}))
	a.waitPod("restartall", "condition=AllContainersRestarting", lineTimeout)
	if cond, want := restartAllStatus(t, a).condition(), "True RestartAllContainersStarted: container exited with restart policy rule"; cond != want {
		t.Errorf("AllContainersRestarting while restarting: %q, want %q", cond, want)
	}
	if fileExists(filepath.Join(dir, "report.runs")) {
		t.Errorf("the defer container ran for a restart of all containers: the pod did not end")
	}
	a.waitPod("restartall", "jsonpath={.status.phase}=Succeeded", 2*lineTimeout)

	for file, want := range map[string]int{"setup.runs": 2, "proxy.runs": 2, "train.runs": 1, "report.runs": 1, "proxy.prestop": 1} {
		if got := len(fileLines(t, filepath.Join(dir, file))); got != want {
			t.Errorf("%s has %d lines, want %d", file, got, want)
		}
	}
	if got := strings.TrimSpace(fileLines(t, filepath.Join(dir, "train.runs"))[0]); got != "2" {
		t.Errorf("train ran %s times, want 2", got)
	}
	st := restartAllStatus(t, a)
	if counts, want := st.restarts(), "setup=1 proxy=1 train=1 last=42"; counts != want {
		t.Errorf("restart counts %q, want %q", counts, want)
	}
	if after, want := st.condition(), "False PodCompleted: "; after != want {
		t.Errorf("AllContainersRestarting once Succeeded: %q, want %q", after, want)
	}
	var restarts []string
	for _, e := range a.events("restartall") {
		if e.Reason == "RestartAllContainers" {
			restarts = append(restarts, e.String())
		}
	}
	if len(restarts) != 1 || !strings.Contains(restarts[0], "Container train exited with code 42") {
		t.Errorf("RestartAllContainers events: %q, want one naming train's exit 42", restarts)
	}
}

// restartAllState is the part of a pod's status TestRestartAllContainersInPlace reads.
type restartAllState struct {
	Status struct {
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
		InitContainerStatuses []containerRestarts `json:"initContainerStatuses"`
		ContainerStatuses     []containerRestarts `json:"containerStatuses"`
	} `json:"status"`
}

type containerRestarts struct {
	Name         string `json:"name"`
	RestartCount int    `json:"restartCount"`
	LastState    struct {
		Terminated *struct {
			ExitCode int `json:"exitCode"`
		} `json:"terminated"`
	} `json:"lastState"`
}

func restartAllStatus(t *testing.T, a *agent) restartAllState {
	t.Helper()
	var st restartAllState
	if err := json.Unmarshal([]byte(a.mustCLI("get", "pod", "restartall", "-o", "json")), &st); err != nil {
		t.Fatalf("decode the pod: %v", err)
	}
	return st
}

// condition is the AllContainersRestarting condition as "STATUS REASON: MESSAGE".
func (s restartAllState) condition() string {
	for _, c := range s.Status.Conditions {
		if c.Type == "AllContainersRestarting" {
			return c.Status + " " + c.Reason + ": " + c.Message
		}
	}
	return "(none)"
}

// restarts lists each container's restart count, and the main container's last exit code.
func (s restartAllState) restarts() string {
	var out []string
	for _, c := range s.Status.InitContainerStatuses {
		out = append(out, fmt.Sprintf("%s=%d", c.Name, c.RestartCount))
	}
	for _, c := range s.Status.ContainerStatuses {
		last := "none"
		if c.LastState.Terminated != nil {
			last = strconv.Itoa(c.LastState.Terminated.ExitCode)
		}
		out = append(out, fmt.Sprintf("%s=%d last=%s", c.Name, c.RestartCount, last))
	}
	return strings.Join(out, " ")
}

// initPolicyPod's init container fails on its first run; its own
// restartPolicy OnFailure retries it although the pod's is Never.
const initPolicyPod = `
apiVersion: v1
kind: Pod
metadata:
  name: initpolicy
spec:
  restartPolicy: Never
  initContainers:
  - name: fetch
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["n=$(( $(cat {{.Runs}} 2>/dev/null || echo 0) + 1 )); echo $n > {{.Runs}}; echo fetch $n; [ $n -ge 2 ]"]
    restartPolicy: OnFailure
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo app ran"]
`

// TestInitContainerOwnRestartPolicy: an init container's own restartPolicy
// (KEP-5307) decides its restart: OnFailure retries the failed first run
// under a pod policy of Never, and the pod goes on and Succeeds (the
// kubelet's computeInitContainerActions with ContainerShouldRestart).
func TestInitContainerOwnRestartPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, initPolicyPod, map[string]string{"Runs": filepath.Join(dir, "runs")})
	r := run(t, "-f", manifest)
	r.assertCode(t, 0)
	r.assertBefore(t, [2]matcher{output("fetch", "fetch 1"), output("fetch", "fetch 2")}, [2]matcher{output("fetch", "fetch 2"), output("app", "app ran")})
	if last := r.lines[len(r.lines)-1].text; last != "podward: pod/initpolicy Succeeded" {
		t.Errorf("last line %q, want %q; stdout:\n%s", last, "podward: pod/initpolicy Succeeded", r.stdout)
	}
}
