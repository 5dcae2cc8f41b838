package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// The probe tests' containers run test/internal/probeserver, whose health
// and readiness the tests flip by creating and removing files.

// startupGatePod has a sidecar whose startupProbe passes only once the
// sidecar listens, a second after it started; the init container after it
// must wait for that.
const startupGatePod = `
apiVersion: v1
kind: Pod
metadata:
  name: startup-gate
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: side
    image: probeserver
    restartPolicy: Always
    command: ["{{.Server}}", "-port", "{{.Port}}", "-delay", "1s"]
    startupProbe:
      httpGet: {path: /healthz, port: {{.Port}}}
      periodSeconds: 1
      failureThreshold: 10
  - name: init
    image: bash
    command: ["/bin/bash", "-c", "echo init ran"]
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo app ran"]
`

// TestStartupProbeGatesNextInitContainer: a sidecar counts as started only
// once its startupProbe passed, and only then does the next init container
// start.
func TestStartupProbeGatesNextInitContainer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	manifest := writeManifest(t, dir, startupGatePod, map[string]any{"Server": probeServerBin, "Port": port})
	r := run(t, "-f", manifest)
	t.Logf("stdout:\n%s", r.stdout)
	r.assertCode(t, 0)

	sideStarted := r.mustFind(t, contains("Normal Started spec.initContainers{side}"))
	initCreated := r.index(contains("Normal Created spec.initContainers{init}"))
	if initCreated < 0 {
		t.Fatalf("the init container after the sidecar never started; stdout:\n%s", r.stdout)
	}
	if d := r.lines[initCreated].at.Sub(sideStarted.at); d < 900*time.Millisecond {
		t.Errorf("the init container was created %v after the sidecar started; its startupProbe can pass only once it listens, 1 s after it started", d.Round(time.Millisecond))
	}
	// The probe failed while the sidecar did not listen, and never after
	// the next container started: it passed before.
	failed := contains("Warning Unhealthy spec.initContainers{side} Startup probe failed: ")
	if r.count(failed) == 0 {
		t.Errorf("no failed startup probe before the sidecar listened; stdout:\n%s", r.stdout)
	}
	for i, l := range r.lines {
		if failed.MatchString(l.text) && i > initCreated {
			t.Errorf("line %d %q: the startup probe failed after the next init container started at line %d", i, l.text, initCreated)
		}
	}
	r.mustFind(t, output("side", "listening on 127.0.0.1:"+strconv.Itoa(port)))
	r.assertBefore(t,
		[2]matcher{contains("Normal Started spec.initContainers{init}"), contains("Normal Created spec.containers{app}")},
		[2]matcher{output("app", "app ran"), contains("Killing spec.initContainers{side}")},
	)
}

// startupPendingPod is startupGatePod with a sidecar whose startupProbe
// passes once the test creates the file healthy.
const startupPendingPod = `
apiVersion: v1
kind: Pod
metadata:
  name: startup-pending
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: side
    image: probeserver
    restartPolicy: Always
    command: ["{{.Server}}", "-port", "{{.Port}}", "-healthy-file", "{{.Dir}}/healthy"]
    startupProbe:
      httpGet: {path: /healthz, port: {{.Port}}}
      periodSeconds: 1
      failureThreshold: 60
  - name: init
    image: bash
    command: ["/bin/bash", "-c", "echo init ran"]
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestStartupProbePendingStatus: while a sidecar's startupProbe fails, the
// sidecar runs but is neither started nor ready, the next init container
// waits and the pod is not initialized; once the probe passes, all of that
// moves on.
func TestStartupProbePendingStatus(t *testing.T) {
	t.Parallel()
	// The directory first: its removal comes after the agent's cleanup.
	dir := t.TempDir()
	a := startAgent(t)
	manifest := writeManifest(t, dir, startupPendingPod, map[string]any{"Server": probeServerBin, "Port": freePort(t), "Dir": dir})
	a.apply("startup-pending", manifest)
	// Two failures: the probe ran against a listening server and failed.
	a.watchEvents("startup-pending", "two failed startup probes", func(evs []event) bool {
		return countEvents(evs, "Warning Unhealthy spec.initContainers{side} Startup probe failed: ") >= 2
	}, lineTimeout)

	p := a.getPod("startup-pending")
	side := p.container(t, "side")
	if side.State.Running == nil || side.Started == nil || *side.Started || side.Ready {
		t.Errorf("sidecar while its startupProbe fails: running %v, started %v, ready %v; want running, not started, not ready",
			side.State.Running != nil, deref(side.Started), side.Ready)
	}
	if st := p.container(t, "init"); st.State.Waiting == nil {
		t.Errorf("the init container after the sidecar is not waiting while the sidecar's startupProbe fails: %v", st)
	}
	if c := p.condition("Initialized"); c != "False" {
		t.Errorf("condition Initialized is %q while the sidecar's startupProbe fails, want False", c)
	}
	if p.Status.Phase != "Pending" {
		t.Errorf("phase %q while the sidecar's startupProbe fails, want Pending", p.Status.Phase)
	}

	touch(t, filepath.Join(dir, "healthy"))
	a.waitPod("startup-pending", "condition=Initialized", lineTimeout)
	a.waitPod("startup-pending", "jsonpath={.status.containerStatuses[0].state.running.startedAt}", lineTimeout)
	p = a.getPod("startup-pending")
	if side := p.container(t, "side"); side.Started == nil || !*side.Started || !side.Ready || side.RestartCount != 0 {
		t.Errorf("sidecar after its startupProbe passed: started %v, ready %v, restartCount %d; want started, ready, 0",
			deref(side.Started), side.Ready, side.RestartCount)
	}
	if st := p.container(t, "init"); st.State.Terminated == nil {
		t.Errorf("the init container did not run to completion: %v", st)
	}
}

func deref(b *bool) bool { return b != nil && *b }

// readyPod's container is ready while the file ready exists.
const readyPod = `
apiVersion: v1
kind: Pod
metadata:
  name: ready-flip
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: web
    image: probeserver
    command: ["{{.Server}}", "-port", "{{.Port}}", "-ready-file", "{{.Dir}}/ready"]
    readinessProbe:
      httpGet: {path: /ready, port: {{.Port}}}
      periodSeconds: 1
      failureThreshold: 1
`

// TestReadinessFlipsReady: the readiness probe drives the container's
// ready flag and the pod's Ready and ContainersReady conditions, both ways.
func TestReadinessFlipsReady(t *testing.T) {
	t.Parallel()
	// The directory first: its removal comes after the agent's cleanup.
	dir := t.TempDir()
	a := startAgent(t)
	ready := filepath.Join(dir, "ready")
	manifest := writeManifest(t, dir, readyPod, map[string]any{"Server": probeServerBin, "Port": freePort(t), "Dir": dir})
	a.apply("ready-flip", manifest)

	// Not ready while the probe fails.
	a.waitPod("ready-flip", "jsonpath={.status.containerStatuses[0].started}=true", lineTimeout)
	a.waitEvent("ready-flip", "Warning Unhealthy spec.containers{web} Readiness probe failed: ", lineTimeout)
	assertReady(t, a.getPod("ready-flip"), false)

	for i, want := range []bool{true, false, true} {
		if want {
			touch(t, ready)
		} else {
			remove(t, ready)
		}
		a.waitPod("ready-flip", "condition=Ready="+strconv.FormatBool(want), lineTimeout)
		p := a.getPod("ready-flip")
		if p.Status.Phase != "Running" {
			t.Errorf("step %d: phase %q, want Running", i+1, p.Status.Phase)
		}
		assertReady(t, p, want)
	}

	// The readiness probe never restarts a container.
	if st := a.getPod("ready-flip").container(t, "web"); st.RestartCount != 0 {
		t.Errorf("restartCount %d after readiness failures, want 0", st.RestartCount)
	}
}

// assertReady checks the pod's Ready and ContainersReady conditions and
// its container's ready flag.
func assertReady(t *testing.T, p pod, want bool) {
	t.Helper()
	status := "False"
	if want {
		status = "True"
	}
	for _, c := range []string{"Ready", "ContainersReady"} {
		if got := p.condition(c); got != status {
			t.Errorf("condition %s is %q, want %q; conditions: %+v", c, got, status, p.Status.Conditions)
		}
	}
	if st := p.container(t, "web"); st.Ready != want {
		t.Errorf("container web: ready %v, want %v", st.Ready, want)
	}
}

// livenessPod's container is healthy while the file healthy-N exists, N
// counting its starts.
const livenessPod = `
apiVersion: v1
kind: Pod
metadata:
  name: liveness
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: probeserver
    command: ["/bin/bash", "-c"]
    args: ["n=$(( $(cat {{.Dir}}/starts 2>/dev/null || echo 0) + 1 )); echo $n > {{.Dir}}/starts; exec {{.Server}} -port {{.Port}} -healthy-file {{.Dir}}/healthy-$n"]
    livenessProbe:
      httpGet: {path: /healthz, port: {{.Port}}}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 3
`

// TestLivenessRestarts: a container whose liveness probe fails
// failureThreshold times in a row is killed and started again, with the
// kubelet's events, and its restart count goes up.
func TestLivenessRestarts(t *testing.T) {
	t.Parallel()
	// The directory first: its removal comes after the agent's cleanup.
	dir := t.TempDir()
	a := startAgent(t)
	manifest := writeManifest(t, dir, livenessPod, map[string]any{"Server": probeServerBin, "Port": freePort(t), "Dir": dir})
	// The first instance is healthy until the test says otherwise; the
	// second one stays healthy.
	touch(t, filepath.Join(dir, "healthy-1"))
	touch(t, filepath.Join(dir, "healthy-2"))
	a.apply("liveness", manifest)
	a.waitPod("liveness", "jsonpath={.status.containerStatuses[0].started}=true", lineTimeout)
	if st := a.getPod("liveness").container(t, "app"); st.RestartCount != 0 {
		t.Fatalf("restartCount %d before the probe failed, want 0", st.RestartCount)
	}

	remove(t, filepath.Join(dir, "healthy-1"))
	a.waitPod("liveness", "jsonpath={.status.containerStatuses[0].restartCount}=1", lineTimeout)
	a.watchEvents("liveness", "second Started event", func(evs []event) bool {
		return countEvents(evs, "Normal Started spec.containers{app} ") >= 2
	}, lineTimeout)

	p := a.getPod("liveness")
	st := p.container(t, "app")
	if st.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1", st.RestartCount)
	}
	if st.LastState.Terminated == nil {
		t.Errorf("status %v, want the killed instance terminated in lastState", st)
	}
	// The Started event comes once the process runs, which can be before
	// its script counted the start: wait for the count (inotify).
	var starts []byte
	counted, err := bintest.WaitInDir(dir, func() bool {
		starts, _ = os.ReadFile(filepath.Join(dir, "starts"))
		return strings.TrimSpace(string(starts)) == "2"
	}, lineTimeout)
	if err != nil || !counted {
		t.Errorf("the container started %q times (%v), want 2", starts, err)
	}

	// Events: three failures, then Killing, then a second start. After the
	// second start a probe may find the new server not listening yet (its
	// first probe comes 1 s after the start, which a loaded machine can
	// miss): such a failure is below the threshold and is left out; a
	// second Killing is not.
	evs := a.events("liveness")
	var seq []string
	for _, e := range evs {
		if e.InvolvedObject.FieldPath != "spec.containers{app}" {
			continue
		}
		restarted := strings.Count(strings.Join(seq, " "), "Started") >= 2
		switch {
		case e.Reason == "Unhealthy" && restarted:
			if !strings.Contains(e.Message, "connection refused") {
				t.Errorf("Unhealthy event %q after the restart, want only a not-yet-listening server", e.Message)
			}
		case e.Reason == "Unhealthy" && e.Type == "Warning" && strings.HasPrefix(e.Message, "Liveness probe failed: "):
			if !strings.Contains(e.Message, "HTTP 500") {
				t.Errorf("Unhealthy event %q, want it to say the probe got HTTP 500", e.Message)
			}
			seq = append(seq, "Unhealthy")
		case e.Reason == "Killing":
			if want := "Container app failed liveness probe, will be restarted"; e.Message != want {
				t.Errorf("Killing event %q, want %q", e.Message, want)
			}
			seq = append(seq, "Killing")
		case e.Reason == "Started":
			seq = append(seq, "Started")
		}
	}
	want := []string{"Started", "Unhealthy", "Unhealthy", "Unhealthy", "Killing", "Started"}
	if strings.Join(seq, " ") != strings.Join(want, " ") {
		t.Errorf("events %q, want %q; all events:\n%s", seq, want, eventList(evs))
	}
}

// stubbornLivenessPod's container ignores SIGTERM; its liveness probe fails
// once the container has set its trap (and touched the file trapped). The
// probe gives it 2 s after the stop signal, the pod 15 s.
const stubbornLivenessPod = `
apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: 15
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo ignoring SIGTERM' TERM; touch {{.Dir}}/trapped; echo up; while true; do sleep 100 & wait; done"]
    livenessProbe:
      exec: {command: ["/bin/bash", "-c", "[ ! -e {{.Dir}}/trapped ]"]}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`

// TestLivenessKillNotDelayedByTermination: a container being stopped
// because its liveness probe failed gets SIGKILL the probe's
// terminationGracePeriodSeconds after its stop signal, even when the pod's
// termination (with a longer grace period) begins meanwhile: a kill
// deadline only ever gets shorter.
func TestLivenessKillNotDelayedByTermination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, stubbornLivenessPod, map[string]string{"Dir": dir})
	p := startPodward(t, "-f", manifest)
	killing := p.waitLine(t, contains("Normal Killing spec.containers{app} Container app failed liveness probe, will be restarted"), lineTimeout)
	// Within the probe's 2 s: the container still ignores its SIGTERM.
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, exitTimeout)
	took := r.exited.Sub(killing.at)
	t.Logf("podward exited %v after the liveness Killing event; stdout:\n%s", took.Round(time.Millisecond), r.stdout)

	if took > 8*time.Second {
		t.Errorf("podward exited %v after the liveness probe's Killing event: the container got SIGKILL only at the pod's 15 s deadline, not 2 s (the probe's terminationGracePeriodSeconds) after its stop signal", took.Round(time.Millisecond))
	}
	if i := r.index(contains("GracePeriodExceeded")); i >= 0 {
		t.Errorf("%q: the container should have been killed at the liveness probe's deadline, long before the pod's", r.lines[i].text)
	}
}
