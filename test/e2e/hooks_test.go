package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// postStartFailPod's container runs until stopped: it appends "sigterm" to
// the file order on SIGTERM and exits 3; its preStop hook appends
// "prestop". Its postStart hook fails. {{.Hook}} is the hook's command, as a
// JSON list.
const postStartFailPod = `
apiVersion: v1
kind: Pod
metadata:
  name: poststart-fails
spec:
  # its PID is the host's, which the test looks for
  hostPID: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo sigterm >> {{.Dir}}/order; exit 3' TERM; echo $BASHPID > {{.Dir}}/app.pid; echo app up; while true; do sleep 100 & wait; done"]
    lifecycle:
      postStart:
        exec: {command: {{.Hook}}}
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo prestop >> {{.Dir}}/order"]}
`

// TestPostStartHookFailure: a postStart hook that fails stops its container
// gracefully — its preStop hook, then SIGTERM — as the kubelet does
// (pkg/kubelet/kuberuntime/kuberuntime_container.go, startContainer →
// killContainer), and the restart policy applies: with Never the pod fails
// (the container exits 3 on SIGTERM). The FailedPostStartHook event is the
// kubelet's "PostStartHook failed", without the hook's output, so that
// secrets do not leak into events.
func TestPostStartHookFailure(t *testing.T) {
	t.Parallel()
	// Each hook waits until the container has set its SIGTERM trap (it
	// writes its PID after), then fails.
	const waitForApp = "for i in $(seq 100); do [ -s {{.Dir}}/app.pid ] && break; sleep 0.05; done; "
	tests := map[string]struct {
		hook string
	}{
		"fails silently": {
			hook: `["/bin/bash", "-c", "` + waitForApp + `exit 1"]`,
		},
		"fails printing a secret": {
			hook: `["/bin/bash", "-c", "` + waitForApp + `echo token=s3cret; exit 1"]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			hook := strings.ReplaceAll(tc.hook, "{{.Dir}}", dir)
			manifest := writeManifest(t, dir, postStartFailPod, map[string]string{"Dir": dir, "Hook": hook})
			p := startPodward(t, "-f", manifest)
			r := p.wait(t, exitTimeout)
			t.Logf("stdout:\n%s", r.stdout)

			r.assertCode(t, 1)
			r.mustFind(t, re(`Warning FailedPostStartHook spec\.containers\{app\} PostStartHook failed$`))
			if i := r.index(contains("s3cret")); i >= 0 {
				t.Errorf("%q: the hook's output must not be in an event", r.lines[i].text)
			}
			r.mustFind(t, re(`Normal Killing spec\.containers\{app\} FailedPostStartHook$`))
			r.assertBefore(t,
				[2]matcher{contains("Normal Started spec.containers{app}"), contains("FailedPostStartHook spec.containers{app}")},
				[2]matcher{contains("FailedPostStartHook spec.containers{app}"), contains("Killing spec.containers{app}")},
				[2]matcher{contains("Killing spec.containers{app}"), contains("podward: pod/poststart-fails Failed")},
			)
			if n := r.count(contains("Started spec.containers{app}")); n != 1 {
				t.Errorf("the container started %d times, want once (restartPolicy Never)", n)
			}
			// Stopped gracefully: the preStop hook, then SIGTERM, which
			// it honours at once (no waiting out the 30 s).
			if got := fileLines(t, filepath.Join(dir, "order")); !slices.Equal(got, []string{"prestop", "sigterm"}) {
				t.Errorf("order file %q, want the preStop hook, then SIGTERM", got)
			}
			if d := r.exited.Sub(p.started); d > 15*time.Second {
				t.Errorf("podward took %v, want the container stopped on its SIGTERM", d.Round(time.Millisecond))
			}
			if pid := readPID(t, filepath.Join(dir, "app.pid")); bintest.ProcessRuns(pid, "echo app up") {
				t.Errorf("the container's process %d still runs after podward exited", pid)
			}
		})
	}
}

// preStopPod has a regular container whose preStop exec hook and SIGTERM
// trap append to the file order, one whose preStop hook fails (both append
// to the file bad), and a sidecar whose preStop hook sleeps a second and
// whose SIGTERM trap writes the time it came.
const preStopPod = `
apiVersion: v1
kind: Pod
metadata:
  name: prestop
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: side
    image: bash
    restartPolicy: Always
    command: ["/bin/bash", "-c"]
    args: ["trap 'date +%s.%N > {{.Dir}}/side.sigterm; exit 0' TERM; echo side up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        sleep: {seconds: 1}
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo sigterm >> {{.Dir}}/order; exit 0' TERM; echo app up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo prestop >> {{.Dir}}/order"]}
  - name: bad
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo sigterm >> {{.Dir}}/bad; exit 0' TERM; echo bad up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo prestop >> {{.Dir}}/bad; echo oops; exit 3"]}
`

// TestPreStopBeforeSIGTERM: without defer containers, a container's
// preStop hook runs before its stop signal: an exec hook's effect comes
// before the SIGTERM, and a sleep hook holds the SIGTERM back its seconds.
// A failed hook is reported, and the stop signal follows all the same.
func TestPreStopBeforeSIGTERM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, preStopPod, map[string]string{"Dir": dir})
	p := startPodward(t, "-f", manifest)
	p.waitLine(t, output("side", "side up"), lineTimeout)
	p.waitLine(t, output("app", "app up"), lineTimeout)
	p.waitLine(t, output("bad", "bad up"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	t.Logf("terminated %v after SIGINT; stdout:\n%s", elapsed.Round(time.Millisecond), r.stdout)

	r.assertCode(t, 0)
	if got, want := fileLines(t, filepath.Join(dir, "order")), []string{"prestop", "sigterm"}; !slices.Equal(got, want) {
		t.Errorf("the app's file has %q, want %q: the preStop hook before the SIGTERM", got, want)
	}
	if got, want := fileLines(t, filepath.Join(dir, "bad")), []string{"prestop", "sigterm"}; !slices.Equal(got, want) {
		t.Errorf("the file of the container whose preStop hook fails has %q, want %q: the SIGTERM after the failed hook", got, want)
	}
	r.mustFind(t, re(`Warning FailedPreStopHook spec\.containers\{bad\} PreStop hook for container bad failed: .*exited with 3: oops$`))
	if n := r.count(contains("FailedPreStopHook")); n != 1 {
		t.Errorf("%d FailedPreStopHook events, want 1 (container bad's)", n)
	}
	r.assertBefore(t,
		[2]matcher{contains("Killing spec.containers{app}"), contains("Killing spec.initContainers{side}")},
		[2]matcher{contains("Killing spec.containers{bad}"), contains("FailedPreStopHook spec.containers{bad}")},
		[2]matcher{contains("FailedPreStopHook spec.containers{bad}"), contains("Killing spec.initContainers{side}")},
		[2]matcher{contains("Killing spec.initContainers{side}"), contains("podward: pod/prestop Succeeded")},
	)

	// The sidecar's SIGTERM came a second after its Killing event: the
	// test read the event a moment after podward recorded it, so the
	// measured gap is, if anything, a bit short.
	killing := r.mustFind(t, contains("Normal Killing spec.initContainers{side}"))
	data, err := os.ReadFile(filepath.Join(dir, "side.sigterm"))
	if err != nil {
		t.Fatalf("the sidecar never got SIGTERM: %v", err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	if err != nil {
		t.Fatalf("the sidecar's SIGTERM time %q: %v", data, err)
	}
	sigterm := time.Unix(0, int64(secs*1e9))
	gap := sigterm.Sub(killing.at)
	t.Logf("the sidecar got SIGTERM %v after its Killing event", gap.Round(time.Millisecond))
	if gap < 900*time.Millisecond {
		t.Errorf("the sidecar got SIGTERM %v after its Killing event, want its 1 s preStop sleep first", gap.Round(time.Millisecond))
	}
	if gap > 10*time.Second {
		t.Errorf("the sidecar got SIGTERM %v after its Killing event, want about its 1 s preStop sleep", gap.Round(time.Millisecond))
	}
}

// deferHooksPod has a defer container, a regular container whose preStop
// hook would write a marker, and a sidecar whose preStop hook writes too.
// Everything appends to the file order.
const deferHooksPod = `
apiVersion: v1
kind: Pod
metadata:
  name: defer-hooks
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "command": ["/bin/bash", "-c", "echo defer >> {{.Dir}}/order; echo flushed"]}]
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: side
    image: bash
    restartPolicy: Always
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo side sigterm >> {{.Dir}}/order; exit 0' TERM; echo side up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo side prestop >> {{.Dir}}/order"]}
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c"]
    args: ["trap 'echo app sigterm >> {{.Dir}}/order; exit 0' TERM; echo app up; while true; do sleep 100 & wait; done"]
    lifecycle:
      preStop:
        exec: {command: ["/bin/bash", "-c", "echo app prestop >> {{.Dir}}/order; touch {{.Dir}}/app-prestop.ran"]}
`

// TestPreStopSkippedWithDeferContainers: in a pod with defer containers the
// regular containers' preStop hooks do not run (the defer containers
// replace them); the containers still get their SIGTERM after the defer
// containers, and a sidecar keeps its preStop hook.
func TestPreStopSkippedWithDeferContainers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeManifest(t, dir, deferHooksPod, map[string]string{"Dir": dir})
	p := startPodward(t, "-f", manifest)
	p.waitLine(t, output("side", "side up"), lineTimeout)
	p.waitLine(t, output("app", "app up"), lineTimeout)
	r, elapsed := p.signalAndWait(t, syscall.SIGINT)
	t.Logf("terminated %v after SIGINT; stdout:\n%s", elapsed.Round(time.Millisecond), r.stdout)

	r.assertCode(t, 0)
	if fileExists(filepath.Join(dir, "app-prestop.ran")) {
		t.Errorf("the regular container's preStop hook ran in a pod with defer containers")
	}
	want := []string{"defer", "app sigterm", "side prestop", "side sigterm"}
	if got := fileLines(t, filepath.Join(dir, "order")); !slices.Equal(got, want) {
		t.Errorf("order file %q, want %q", got, want)
	}
	// A container's output may come before its start event (the event
	// follows the start's return): only the events are ordered.
	if r.index(output("flush", "flushed")) < 0 {
		t.Errorf("the defer container's output is missing")
	}
	r.assertBefore(t,
		[2]matcher{contains("DeferStarted spec.deferContainers{flush}"), contains("DeferCompleted spec.deferContainers{flush}")},
		[2]matcher{contains("DeferCompleted spec.deferContainers{flush}"), contains("Killing spec.containers{app}")},
		[2]matcher{contains("Killing spec.containers{app}"), contains("Killing spec.initContainers{side}")},
		[2]matcher{contains("Killing spec.initContainers{side}"), contains("podward: pod/defer-hooks Succeeded")},
	)
	if i := r.index(contains("FailedPreStopHook")); i >= 0 {
		t.Errorf("a preStop hook failed: %q", r.lines[i].text)
	}
}
