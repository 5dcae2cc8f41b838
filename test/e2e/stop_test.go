package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// Every container gets its stop signal and at least 2 s before SIGKILL, as
// the kubelet gives each container its minimum shutdown window (kubelet
// 1.37, pkg/kubelet/kuberuntime/kuberuntime_container.go, killContainer:
// the preStop hook and the wait for its turn use up the grace period, then
// StopContainer with at least minimumGracePeriodInSeconds, 2 s).

// longPreStopPod's preStop hook sleeps far longer than its 2 s grace
// period; the container exits 0 half a second after its SIGTERM (a SIGKILL
// at the deadline, right after the signal, would catch it).
const longPreStopPod = `
apiVersion: v1
kind: Pod
metadata:
  name: long-prestop
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo sigterm; sleep 0.5; exit 0' TERM; echo app up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        sleep: {seconds: 30}
`

// TestPreStopLongerThanGracePeriod: the hook is cut off at the deadline,
// then the container gets its SIGTERM (and 2 s), exits 0 and the pod
// Succeeded — not SIGKILLed unsignalled with exit code 137 and Failed.
func TestPreStopLongerThanGracePeriod(t *testing.T) {
	eachRuntime(t, testPreStopLongerThanGracePeriod)
}

func testPreStopLongerThanGracePeriod(t *testing.T, rt runtimeEnv) {
	manifest := rt.manifest(t, t.TempDir(), longPreStopPod, nil)
	p := rt.start(t, "-f", manifest)
	p.waitLine(t, output("app", "app up"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	t.Logf("terminated %v after SIGINT (grace period 2s, preStop sleep 30s); stdout:\n%s", elapsed.Round(time.Millisecond), r.stdout)

	r.assertCode(t, 0)
	r.mustFind(t, output("app", "sigterm"))
	r.mustFind(t, contains("podward: pod/long-prestop Succeeded"))
	if elapsed < 1500*time.Millisecond {
		t.Errorf("terminated %v after SIGINT: the preStop hook should have run until the 2 s deadline", elapsed.Round(time.Millisecond))
	}
	if elapsed > 15*time.Second {
		t.Errorf("terminated %v after SIGINT, want about the 2 s grace period", elapsed.Round(time.Millisecond))
	}
	if i := r.index(contains("did not stop in time")); i >= 0 {
		t.Errorf("the container was killed: %q", r.lines[i].text)
	}
}

// termIgnoringMainPod's regular container ignores SIGTERM; its sidecar s1
// writes the time its SIGTERM came and exits 0; sidecar s2 ignores SIGTERM.
const termIgnoringMainPod = `
apiVersion: v1
kind: Pod
metadata:
  name: stubborn-main
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: s1
    image: bash
    restartPolicy: Always
    command: ["/bin/bash", "-c"]
    args: ["trap 'date +%s.%N > {{.Dir}}/s1.sigterm; exit 0' TERM; echo s1 up; while true; do sleep 100 & wait; done"]
  - name: s2
    image: bash
    restartPolicy: Always
    command: ["/bin/bash", "-c"]
    args: ["trap '' TERM; echo s2 up; while true; do sleep 100 & wait; done"]
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap '' TERM; echo app up; while true; do sleep 100 & wait; done"]
`

// TestSidecarsSignalledAfterATermIgnoringMain: the main is killed at the
// deadline; its sidecars, which waited for it, get their SIGTERM then — all
// at once, as the kubelet's sidecars stop waiting for their turn when the
// grace period is over (kuberuntime_termination_order.go, waitForTurn) —
// and 2 s before SIGKILL, instead of being killed with it unsignalled.
func TestSidecarsSignalledAfterATermIgnoringMain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, termIgnoringMainPod, map[string]string{"Dir": dir})
	p := startPodward(t, "-f", manifest)
	p.waitLine(t, output("s1", "s1 up"), lineTimeout)
	p.waitLine(t, output("s2", "s2 up"), lineTimeout)
	p.waitLine(t, output("app", "app up"), lineTimeout)
	// Its worker has seen it start, so the SIGINT's termination signals it
	// at once: it gets no more than the grace period. (A termination that
	// comes while its start is still being reported signals it once the
	// start is, with the 2 s minimum from then, past the deadline.)
	p.waitLine(t, re(`Normal Started spec\.containers\{app\} Started container app$`), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	sent := r.exited.Add(-elapsed)
	t.Logf("terminated %v after SIGINT (grace period 2s); stdout:\n%s", elapsed.Round(time.Millisecond), r.stdout)

	r.assertCode(t, 1) // app was killed: 137
	data, err := os.ReadFile(filepath.Join(dir, "s1.sigterm"))
	if err != nil {
		t.Fatalf("the sidecar s1 never got SIGTERM: %v", err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	if err != nil {
		t.Fatalf("s1's SIGTERM time %q: %v", data, err)
	}
	gap := time.Unix(0, int64(secs*1e9)).Sub(sent)
	t.Logf("s1 got SIGTERM %v after the SIGINT", gap.Round(time.Millisecond))
	if gap < 1500*time.Millisecond {
		t.Errorf("s1 got SIGTERM %v after the SIGINT: sidecars wait for the regular container until the 2 s deadline", gap.Round(time.Millisecond))
	}
	// s2 ignored its SIGTERM, which came at the deadline: it had its 2 s.
	if elapsed < 3500*time.Millisecond {
		t.Errorf("terminated %v after SIGINT: s2 should have had 2 s after its SIGTERM at the 2 s deadline", elapsed.Round(time.Millisecond))
	}
	if elapsed > 20*time.Second {
		t.Errorf("terminated %v after SIGINT, want about 4 s", elapsed.Round(time.Millisecond))
	}
	r.mustFind(t, re(`Warning GracePeriodExceeded pod/stubborn-main Grace period exceeded: killed app; stopping s1, s2 \(SIGKILL 2s after the stop signal\)$`))
	r.mustFind(t, re(`Killing spec\.initContainers\{s2\} Killing container s2: it did not stop in time$`))
	if i := r.index(re(`Killing spec\.initContainers\{s1\} Killing container s1`)); i >= 0 {
		t.Errorf("s1 exited on its SIGTERM, yet: %q", r.lines[i].text)
	}
}

// cliOut runs `podward ARGS...` against the agent and returns its stdout and
// stderr; the test fails if it does not exit 0.
func (a *agent) cliOut(args ...string) (stdout, stderr string) {
	t := a.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, podwardBin, args...)
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+a.socket)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("podward %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// readTime reads the time a container wrote with date +%s.%N.
func readTime(t *testing.T, file string) time.Time {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	if err != nil {
		t.Fatalf("the time in %s, %q: %v", file, data, err)
	}
	return time.Unix(0, int64(secs*1e9))
}

// oneSecondPod's preStop hook would sleep 30 s; its SIGTERM trap writes the
// time and exits 0.
const oneSecondPod = `
apiVersion: v1
kind: Pod
metadata:
  name: one-second
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'date +%s.%N > {{.Dir}}/app.sigterm; exit 0' TERM; echo up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        sleep: {seconds: 30}
`

// TestDeleteGracePeriodZeroIsOneSecond: as with kubectl, `delete
// --grace-period 0` without --force asks for 1 s (kubectl
// pkg/cmd/delete/delete.go, Complete): the preStop hook runs for that
// second, then the container gets its SIGTERM.
func TestDeleteGracePeriodZeroIsOneSecond(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	dir := t.TempDir()
	a.apply("one-second", writeManifest(t, dir, oneSecondPod, map[string]string{"Dir": dir}))
	a.waitPod("one-second", "condition=Ready", lineTimeout)

	start := time.Now()
	out, errOut := a.cliOut("delete", "pod", "one-second", "--grace-period", "0")
	took := time.Since(start)
	if out != "pod \"one-second\" deleted\n" || errOut != "" {
		t.Fatalf("delete --grace-period 0: stdout %q, stderr %q", out, errOut)
	}
	gap := readTime(t, filepath.Join(dir, "app.sigterm")).Sub(start)
	t.Logf("SIGTERM %v after the delete began; delete returned after %v", gap.Round(time.Millisecond), took.Round(time.Millisecond))
	if gap < 900*time.Millisecond || gap > 10*time.Second {
		t.Errorf("SIGTERM %v after the delete, want the preStop hook cut off after 1 s", gap.Round(time.Millisecond))
	}
	if _, err := a.cli("get", "pod", "one-second"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("the pod is still there after delete waited for it: %v", err)
	}
}

// forcedPod's container writes its PID, and the time of each SIGTERM, which
// it survives; its defer container would leave a file.
const forcedPod = `
apiVersion: v1
kind: Pod
metadata:
  name: forced
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "command": ["/bin/bash", "-c", "touch {{.Dir}}/flush.ran"]}]
spec:
  # its PID is the host's, which the test looks for
  hostPID: true
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'date +%s.%N > {{.Dir}}/app.sigterm' TERM; echo $BASHPID > {{.Dir}}/app.pid; echo up; while true; do sleep 100 & wait; done"]
`

// TestDeleteForce: `delete --force` prints kubectl's warning and "force
// deleted", and the pod is gone from the agent's API at once — its name
// free for a new pod — while the agent still stops its containers with the
// kubelet's minimum: SIGTERM at once (the defer containers are skipped),
// SIGKILL 2 s later.
func TestDeleteForce(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	dir := t.TempDir()
	manifest := writeManifest(t, dir, forcedPod, map[string]string{"Dir": dir})
	a.apply("forced", manifest)
	a.waitPod("forced", "condition=Ready", lineTimeout)
	pid := readPID(t, filepath.Join(dir, "app.pid"))

	out, errOut := a.cliOut("delete", "pod", "forced", "--force")
	deleted := time.Now()
	if out != "pod \"forced\" force deleted\n" {
		t.Errorf("delete --force printed %q", out)
	}
	const warning = "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.\n"
	if errOut != warning {
		t.Errorf("delete --force warned %q, want kubectl's %q", errOut, warning)
	}
	if !bintest.ProcessRuns(pid, "bash") {
		t.Fatalf("the container's process %d is gone already: the forced delete should not have waited for it", pid)
	}
	if _, err := a.cli("get", "pod", "forced"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("a force-deleted pod is still served: %v", err)
	}
	// The name is free at once.
	if out := a.mustCLI("apply", "-f", manifest); out != "pod/forced created\n" {
		t.Errorf("apply after the forced delete: %q", out)
	}

	if !bintest.WaitExit(pid, 15*time.Second) {
		t.Fatalf("the force-deleted pod's container %d still runs", pid)
	}
	killed := time.Now()
	sigterm := readTime(t, filepath.Join(dir, "app.sigterm"))
	t.Logf("SIGTERM %v after the delete returned; gone %v after the SIGTERM",
		sigterm.Sub(deleted).Round(time.Millisecond), killed.Sub(sigterm).Round(time.Millisecond))
	if d := killed.Sub(sigterm); d < 1500*time.Millisecond || d > 10*time.Second {
		t.Errorf("killed %v after its SIGTERM, want the 2 s minimum", d.Round(time.Millisecond))
	}
	if d := sigterm.Sub(deleted); d > 2*time.Second {
		t.Errorf("SIGTERM %v after the forced delete, want it at once", d.Round(time.Millisecond))
	}
	if fileExists(filepath.Join(dir, "flush.ran")) {
		t.Errorf("the defer container ran after a forced delete")
	}
}
