package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orderPod has two sidecars around a plain init container, two regular
// containers and two defer containers. Each long-running container appends
// "start X" when it starts and "stop X" on SIGTERM; each defer container
// appends "defer X"; all to one file in a hostPath volume.
//
// A sidecar counts as started once its process runs, so the container after
// it could write its line before the sidecar's bash got to its own. To keep
// the file's order the order in which podward started things, the container
// after a sidecar waits (a bounded second) for the sidecar's line; if podward
// started it first, the wait runs out and the order in the file shows it. The
// test also checks the order of podward's events, which has no such race.
//
// d1 sleeps before writing, so that d1 and d2 run in parallel would show.
const orderPod = `
apiVersion: v1
kind: Pod
metadata:
  name: order
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [
        {"name": "d1", "image": "bash", "command": ["{{.Bash}}", "-c", "sleep 0.3; echo defer d1 >> {{.Mnt}}/order"],
         "volumeMounts": [{"name": "shared", "mountPath": "{{.Mnt}}"}]},
        {"name": "d2", "image": "bash", "command": ["{{.Bash}}", "-c", "echo defer d2 >> {{.Mnt}}/order"],
         "volumeMounts": [{"name": "shared", "mountPath": "{{.Mnt}}"}]}
      ]
spec:
  terminationGracePeriodSeconds: 30
  initContainers:
  - name: s1
    image: bash
    restartPolicy: Always
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo stop s1 >> {{.Mnt}}/order; exit 0' TERM; echo start s1 >> {{.Mnt}}/order; while true; do sleep 100 & wait; done"]
    volumeMounts: [{name: shared, mountPath: "{{.Mnt}}"}]
  - name: init
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["for i in $(seq 50); do grep -qx 'start s1' {{.Mnt}}/order && break; sleep 0.02; done; echo init >> {{.Mnt}}/order"]
    volumeMounts: [{name: shared, mountPath: "{{.Mnt}}"}]
  - name: s2
    image: bash
    restartPolicy: Always
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo stop s2 >> {{.Mnt}}/order; exit 0' TERM; echo start s2 >> {{.Mnt}}/order; while true; do sleep 100 & wait; done"]
    volumeMounts: [{name: shared, mountPath: "{{.Mnt}}"}]
  containers:
  - name: m1
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo stop m1 >> {{.Mnt}}/order; exit 0' TERM; for i in $(seq 50); do grep -qx 'start s2' {{.Mnt}}/order && break; sleep 0.02; done; echo start m1 >> {{.Mnt}}/order; while true; do sleep 100 & wait; done"]
    volumeMounts: [{name: shared, mountPath: "{{.Mnt}}"}]
  - name: m2
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo stop m2 >> {{.Mnt}}/order; exit 0' TERM; for i in $(seq 50); do grep -qx 'start s2' {{.Mnt}}/order && break; sleep 0.02; done; echo start m2 >> {{.Mnt}}/order; while true; do sleep 100 & wait; done"]
    volumeMounts: [{name: shared, mountPath: "{{.Mnt}}"}]
  volumes:
  - name: shared
    hostPath: {path: "{{.Shared}}", type: Directory}
`

func TestStartAndStopOrder(t *testing.T) {
	needRoot(t)
	eachRuntime(t, testStartAndStopOrder)
}

func testStartAndStopOrder(t *testing.T, rt runtimeEnv) {
	dir := t.TempDir()
	// The mountPath exists on the host but stays empty there: the file
	// lands in the hostPath directory only if the volume was mounted.
	shared, mnt := filepath.Join(dir, "shared"), filepath.Join(dir, "mnt")
	mkdirs(t, shared, mnt)
	manifest := rt.manifest(t, dir, orderPod, map[string]string{"Mnt": mnt, "Shared": shared})

	// Interrupted once both regular containers run: how long that takes
	// differs between runtimes.
	p := rt.start(t, "-f", manifest)
	p.waitLine(t, contains("Started spec.containers{m1}"), lineTimeout)
	p.waitLine(t, contains("Started spec.containers{m2}"), lineTimeout)
	r, _ := p.signalAndWait(t, syscall.SIGINT)
	r.assertCode(t, 0)

	got := fileLines(t, filepath.Join(shared, "order"))
	t.Logf("order file:\n%q", got)
	want := [][]string{
		{"start s1"}, {"init"}, {"start s2"},
		{"start m1", "start m2"}, // in either order
		{"defer d1"}, {"defer d2"},
		{"stop m1", "stop m2"},
		{"stop s2"}, {"stop s1"},
	}
	rest := got
	for _, group := range want {
		if len(rest) < len(group) {
			t.Fatalf("order file ends before %q:\n%q", group, got)
		}
		head := slices.Clone(rest[:len(group)])
		slices.Sort(head)
		if !slices.Equal(head, group) {
			t.Fatalf("order file has %q where %q belongs:\n%q", rest[:len(group)], group, got)
		}
		rest = rest[len(group):]
	}
	if len(rest) > 0 {
		t.Fatalf("order file has extra lines %q:\n%q", rest, got)
	}

	// The same order in podward's events.
	startedS1 := contains("Started spec.initContainers{s1}")
	createdInit := contains("Created spec.initContainers{init}")
	startedS2 := contains("Started spec.initContainers{s2}")
	createdM1 := contains("Created spec.containers{m1}")
	createdM2 := contains("Created spec.containers{m2}")
	timeout := contains("podward: interrupted: terminating gracefully")
	deferStartedD1 := contains("DeferStarted spec.deferContainers{d1}")
	deferDoneD1 := contains("DeferCompleted spec.deferContainers{d1}")
	deferStartedD2 := contains("DeferStarted spec.deferContainers{d2}")
	deferDoneD2 := contains("DeferCompleted spec.deferContainers{d2}")
	killingM1 := contains("Killing spec.containers{m1}")
	killingM2 := contains("Killing spec.containers{m2}")
	killingS2 := contains("Killing spec.initContainers{s2}")
	killingS1 := contains("Killing spec.initContainers{s1}")
	r.assertBefore(t,
		[2]matcher{startedS1, createdInit},
		[2]matcher{createdInit, startedS2},
		[2]matcher{startedS2, createdM1},
		[2]matcher{startedS2, createdM2},
		[2]matcher{createdM1, timeout},
		[2]matcher{createdM2, timeout},
		[2]matcher{timeout, deferStartedD1},
		[2]matcher{deferDoneD1, deferStartedD2},
		[2]matcher{deferDoneD2, killingM1},
		[2]matcher{deferDoneD2, killingM2},
		[2]matcher{killingM1, killingS2},
		[2]matcher{killingM2, killingS2},
		[2]matcher{killingS2, killingS1},
		[2]matcher{killingS1, contains("podward: pod/order Succeeded")},
	)
}

// earlyEndPod has a 60 s grace period and a defer container that takes
// about a second; its container exits 0 on SIGTERM.
const earlyEndPod = `
apiVersion: v1
kind: Pod
metadata:
  name: early-end
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "command": ["{{.Bash}}", "-c", "echo flushing; sleep 1; echo flushed"]}]
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'echo bye; exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
`

// TestDeferEndsTerminationEarly: the grace period is an upper bound; the
// pod is done as soon as its defer containers are, and then its containers
// exit on SIGTERM. The run is ended with SIGTERM, like a service manager
// would.
func TestDeferEndsTerminationEarly(t *testing.T) {
	eachRuntime(t, testDeferEndsTerminationEarly)
}

func testDeferEndsTerminationEarly(t *testing.T, rt runtimeEnv) {
	manifest := rt.manifest(t, t.TempDir(), earlyEndPod, nil)
	p := rt.start(t, "-f", manifest)
	p.waitLine(t, output("app", "serving"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGTERM)
	t.Logf("terminated %v after SIGTERM (grace period 60s)", elapsed.Round(time.Millisecond))

	r.assertCode(t, 0)
	if elapsed > 20*time.Second {
		t.Errorf("termination took %v: it should end once the defer container is done, long before the 60s grace period", elapsed)
	}
	r.assertBefore(t,
		[2]matcher{contains("podward: interrupted: terminating gracefully"), contains("DeferStarted spec.deferContainers{flush}")},
		[2]matcher{output("flush", "flushed"), contains("DeferCompleted spec.deferContainers{flush}")},
		[2]matcher{contains("DeferCompleted spec.deferContainers{flush}"), contains("Killing spec.containers{app}")},
		[2]matcher{output("app", "bye"), contains("podward: pod/early-end Succeeded")},
	)
	if n := r.count(contains("GracePeriodExceeded")); n > 0 {
		t.Errorf("unexpected GracePeriodExceeded; stdout:\n%s", r.stdout)
	}
}

// retryPod's defer container fails on its first two attempts and succeeds
// on the third; it counts its attempts in an emptyDir, which lives as long
// as the pod.
const retryPod = `
apiVersion: v1
kind: Pod
metadata:
  name: retry
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{
        "name": "flaky",
        "image": "bash",
        "command": ["{{.Bash}}", "-c"],
        "args": ["n=$(cat {{.Mnt}}/attempts 2>/dev/null || echo 0); n=$((n+1)); echo $n > {{.Mnt}}/attempts; echo attempt $n; [ $n -ge 3 ]"],
        "volumeMounts": [{"name": "state", "mountPath": "{{.Mnt}}"}]
      }]
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
  volumes:
  - name: state
    emptyDir: {}
`

func TestDeferRetriedWithBackoff(t *testing.T) {
	needRoot(t)
	eachRuntime(t, testDeferRetriedWithBackoff)
}

func testDeferRetriedWithBackoff(t *testing.T, rt runtimeEnv) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	mkdirs(t, mnt)
	manifest := rt.manifest(t, dir, retryPod, map[string]string{"Mnt": mnt})
	p := rt.start(t, "-f", manifest, "--backoff-base", "1s")
	p.waitLine(t, output("app", "serving"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	t.Logf("terminated %v after SIGINT (grace period 60s)", elapsed.Round(time.Millisecond))

	r.assertCode(t, 0)
	if elapsed > 20*time.Second {
		t.Errorf("termination took %v, want it to end long before the 60s grace period", elapsed)
	}

	// Three attempts: fail, fail, succeed, each reported.
	var attempts []line
	var at []int // attempts' indexes in r.lines
	backoff := re(`BackOff spec\.deferContainers\{flaky\}`)
	for i, l := range r.lines {
		if re(`DeferStarted spec\.deferContainers\{flaky\}|DeferFailed spec\.deferContainers\{flaky\}|DeferCompleted spec\.deferContainers\{flaky\}`).MatchString(l.text) {
			attempts = append(attempts, l)
			at = append(at, i)
		}
	}
	wantSeq := []string{"DeferStarted", "DeferFailed", "DeferStarted", "DeferFailed", "DeferStarted", "DeferCompleted"}
	var gotSeq []string
	for _, l := range attempts {
		gotSeq = append(gotSeq, re(`Defer\w+`).FindString(l.text))
	}
	if !slices.Equal(gotSeq, wantSeq) {
		t.Fatalf("defer events %q, want %q; stdout:\n%s", gotSeq, wantSeq, r.stdout)
	}
	for i := 1; i <= 3; i++ {
		r.mustFind(t, output("flaky", "attempt "+strconv.Itoa(i)))
	}
	// The first retry is immediate, the second waits --backoff-base (1 s):
	// the planner's decision shows as the BackOff event, which the worker
	// emits for each wait of a plan, before the second retry only. How
	// soon the first retry starts is the runtime's (on CRI: a pull of the
	// image, a create and a start, over a second under load), not timed.
	backoffs := func(from, to int) (n int) {
		for _, l := range r.lines[at[from]+1 : at[to]] {
			if backoff.MatchString(l.text) {
				n++
			}
		}
		return n
	}
	if n := backoffs(1, 2); n != 0 {
		t.Errorf("%d BackOff events between the first failure and the first retry, want none (an immediate retry)", n)
	}
	if n := backoffs(3, 4); n != 1 {
		t.Errorf("%d BackOff events between the second failure and the second retry, want 1", n)
	}
	if d := attempts[4].at.Sub(attempts[3].at); d < 500*time.Millisecond {
		t.Errorf("second retry came %v after the failure, want the 1s backoff", d)
	}
	r.assertBefore(t,
		[2]matcher{contains("DeferCompleted spec.deferContainers{flaky}"), contains("Killing spec.containers{app}")},
	)
}

// hangPod's defer container never finishes; its unique sleep lets the test
// check it was killed. Its container exits 0 on SIGTERM, which it gets at
// the deadline (every container gets its stop signal and 2 s before
// SIGKILL), so the pod Succeeded: the phase is the regular containers'.
const hangPod = `
apiVersion: v1
kind: Pod
metadata:
  name: hang
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "stuck", "image": "bash", "command": ["{{.Bash}}", "-c", "echo stuck; exec sleep {{.Sleep}}"]}]
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
`

func TestDeferKilledAtDeadline(t *testing.T) {
	eachRuntime(t, testDeferKilledAtDeadline)
}

func testDeferKilledAtDeadline(t *testing.T, rt runtimeEnv) {
	marker := newSleepMarker()
	manifest := rt.manifest(t, t.TempDir(), hangPod, map[string]string{"Sleep": marker})
	const timeout = time.Second
	p := rt.start(t, "-f", manifest, "--timeout", timeout.String(), "--grace-period", "3")
	p.waitLine(t, output("stuck", "stuck"), lineTimeout)
	r := p.wait(t, exitTimeout)
	// Termination began at least the timeout after podward started, so
	// this is never less than how long it took.
	elapsed := r.exited.Sub(p.started) - timeout
	t.Logf("terminated %v after the timeout (grace period 3s)", elapsed.Round(time.Millisecond))

	r.assertCode(t, 0)
	if elapsed < 3*time.Second || elapsed > 15*time.Second {
		t.Errorf("termination took %v, want about the 3s grace period", elapsed)
	}
	r.mustFind(t, re(`Warning GracePeriodExceeded pod/hang .*defer containers that did not complete: stuck$`))
	r.mustFind(t, contains("podward: pod/hang Succeeded"))
	if r.count(contains("DeferCompleted")) > 0 {
		t.Errorf("a defer container that was killed is reported as completed; stdout:\n%s", r.stdout)
	}
	assertNoProcess(t, "sleep "+marker)
}

// TestSecondInterruptKills is Ctrl-C, then Ctrl-C again while a defer
// container hangs: the second one stops everything at once (grace period 0:
// the stop signal, SIGKILL 2 s later) instead of waiting out the 60 s grace
// period; the app exits 0 on its SIGTERM.
func TestSecondInterruptKills(t *testing.T) {
	eachRuntime(t, testSecondInterruptKills)
}

func testSecondInterruptKills(t *testing.T, rt runtimeEnv) {
	marker := newSleepMarker()
	manifest := rt.manifest(t, t.TempDir(), hangPod, map[string]string{"Sleep": marker})
	p := rt.start(t, "-f", manifest)
	p.waitLine(t, output("app", "serving"), lineTimeout)
	p.signal(t, syscall.SIGINT)
	p.waitLine(t, contains("DeferStarted spec.deferContainers{stuck}"), lineTimeout)
	p.waitLine(t, output("stuck", "stuck"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	t.Logf("exited %v after the second SIGINT (grace period 60s)", elapsed.Round(time.Millisecond))

	r.assertCode(t, 0)
	if elapsed > 10*time.Second {
		t.Errorf("exit took %v after the second interrupt, want it at once", elapsed)
	}
	r.mustFind(t, contains("podward: interrupted again: killing with grace period 0"))
	r.mustFind(t, re(`Warning GracePeriodExceeded pod/hang .*defer containers that did not complete: stuck$`))
	assertNoProcess(t, "sleep "+marker)
}

// slowInitPod is interrupted while its init container runs: neither the
// regular container nor the defer container may ever start. The init
// container traps SIGTERM: on the CRI runtime it is PID 1 of its PID
// namespace, which ignores signals it does not handle.
const slowInitPod = `
apiVersion: v1
kind: Pod
metadata:
  name: slow-init
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "command": ["{{.Bash}}", "-c", "touch {{.Dir}}/flush.ran"],
        "volumeMounts": [{"name": "dir", "mountPath": "{{.Dir}}"}]}]
spec:
  terminationGracePeriodSeconds: 60
  initContainers:
  - name: migrate
    image: bash
    command: ["{{.Bash}}", "-c", "trap 'exit 143' TERM; echo migrating; sleep {{.Sleep}} & wait"]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "touch {{.Dir}}/app.ran; exec sleep 1000"]
    volumeMounts: [{name: dir, mountPath: "{{.Dir}}"}]
  volumes:
  - name: dir
    hostPath: {path: "{{.Dir}}", type: Directory}
`

func TestInterruptDuringInit(t *testing.T) {
	needRoot(t)
	eachRuntime(t, testInterruptDuringInit)
}

func testInterruptDuringInit(t *testing.T, rt runtimeEnv) {
	dir := t.TempDir()
	marker := newSleepMarker()
	manifest := rt.manifest(t, dir, slowInitPod, map[string]string{"Dir": dir, "Sleep": marker})
	p := rt.start(t, "-f", manifest)
	p.waitLine(t, output("migrate", "migrating"), lineTimeout)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, exitTimeout)
	assertNoProcess(t, "sleep "+marker)

	r.assertCode(t, 1)
	r.mustFind(t, contains("Normal DeferSkipped pod/slow-init"))
	r.mustFind(t, contains("podward: pod/slow-init Failed"))
	for _, m := range []matcher{contains("Started spec.containers{"), contains("DeferStarted"), contains("Created spec.containers{"), contains("Created spec.deferContainers{")} {
		if i := r.index(m); i >= 0 {
			t.Errorf("line %q: nothing may start after an interrupt during init; stdout:\n%s", r.lines[i].text, r.stdout)
		}
	}
	for _, f := range []string{"app.ran", "flush.ran"} {
		if fileExists(filepath.Join(dir, f)) {
			t.Errorf("%s exists: a container ran after an interrupt during init", f)
		}
	}
}

// failingDeferPod's defer container always fails, at once.
const failingDeferPod = `
apiVersion: v1
kind: Pod
metadata:
  name: always-fails
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "stuck", "image": "bash", "command": ["{{.Bash}}", "-c", "echo stuck; exit 1"]}]
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
`

// TestDeferRetryAnnouncedOnlyWhenItHappens: a DeferFailed event that says
// the container "is retried" must be followed by that retry. A defer
// container killed at the deadline is not retried, nor is one whose next
// retry would come after the deadline.
func TestDeferRetryAnnouncedOnlyWhenItHappens(t *testing.T) {
	eachRuntime(t, testDeferRetryAnnouncedOnlyWhenItHappens)
}

func testDeferRetryAnnouncedOnlyWhenItHappens(t *testing.T, rt runtimeEnv) {
	tests := map[string]struct {
		manifest string
		args     []string
		code     int
		want     *regexp.Regexp
	}{
		"killed at the deadline": {
			manifest: hangPod,
			args:     []string{"--grace-period", "1"},
			code:     0, // the app exits 0 on its SIGTERM at the deadline
			want:     re(`GracePeriodExceeded pod/\S+ .*defer containers that did not complete: stuck$`),
		},
		"next retry after the deadline": {
			// Fails, is retried at once, fails again: the next retry
			// would wait 10 s, past the 2 s deadline. podward gives the
			// defer container up and stops the app gracefully at once
			// (it exits 0 on SIGTERM) instead of idling to the deadline.
			manifest: failingDeferPod,
			args:     []string{"--grace-period", "2", "--backoff-base", "10s"},
			code:     0,
			want:     re(`DeferFailed spec.deferContainers\{stuck\} .*no retry fits in the grace period left`),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			manifest := rt.manifest(t, t.TempDir(), tc.manifest, map[string]string{"Sleep": newSleepMarker()})
			p := rt.start(t, append([]string{"-f", manifest}, tc.args...)...)
			p.waitLine(t, output("app", "serving"), lineTimeout)
			p.signal(t, syscall.SIGINT)
			r := p.wait(t, exitTimeout)

			r.assertCode(t, tc.code)
			r.mustFind(t, tc.want)
			for i, l := range r.lines {
				if !strings.Contains(l.text, "DeferFailed") || !strings.Contains(l.text, "retried") {
					continue
				}
				if !slices.ContainsFunc(r.lines[i+1:], func(l line) bool {
					return strings.Contains(l.text, "DeferStarted spec.deferContainers{stuck}")
				}) {
					t.Errorf("%q, but the defer container never started again; stdout:\n%s", l.text, r.stdout)
				}
			}
		})
	}
}

// deferPhasePod is a job whose main exits at once, with two defer
// containers: d1 takes a few seconds before it writes its line, d2 writes
// at once; both to the file done in {{.Dir}}.
const deferPhasePod = `
apiVersion: v1
kind: Pod
metadata:
  name: defer-phase
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [
        {"name": "d1", "image": "bash", "command": ["/bin/bash", "-c", "sleep 3; echo d1 >> {{.Dir}}/done"]},
        {"name": "d2", "image": "bash", "command": ["/bin/bash", "-c", "echo d2 >> {{.Dir}}/done"]}
      ]
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  containers:
  - name: job
    image: bash
    command: ["/bin/bash", "-c", "echo job done"]
`

// TestPhaseTerminalOnlyOnceDeferContainersRan: a job's pod becomes
// Succeeded only once its defer containers ran, not when its main exits:
// while d1 runs the pod is Running and keeps its podIP, and `podward wait
// --for=jsonpath='{.status.phase}'=Succeeded` returns only after both defer
// containers wrote their lines. The kubelet never reports a terminal phase
// for a pod that could still have running containers
// (pkg/kubelet/status/status_manager.go, mergePodStatus).
func TestPhaseTerminalOnlyOnceDeferContainersRan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startAgent(t)
	manifest := writeManifest(t, dir, deferPhasePod, map[string]string{"Dir": dir})
	a.apply("defer-phase", manifest)

	a.waitEvent("defer-phase", "Normal DeferStarted spec.deferContainers{d1} ", lineTimeout)
	if p := a.getPod("defer-phase"); p.Status.Phase != "Running" || p.Status.PodIP == "" {
		t.Errorf("while d1 runs: phase %q, podIP %q; want Running with its podIP", p.Status.Phase, p.Status.PodIP)
	}

	a.waitPod("defer-phase", "jsonpath={.status.phase}=Succeeded", lineTimeout)
	data, err := os.ReadFile(filepath.Join(dir, "done"))
	if got := strings.Fields(string(data)); err != nil || !slices.Equal(got, []string{"d1", "d2"}) {
		t.Errorf("when the pod was Succeeded the defer containers had written %q (%v), want d1 then d2", got, err)
	}
}
