package e2e

import (
	"strings"
	"testing"
	"time"
)

// deadlinePod runs for good, but may be active for 2 s only. Its container
// exits 0 on SIGTERM, and its defer container exits 0.
const deadlinePod = `
apiVersion: v1
kind: Pod
metadata:
  name: deadline
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "imagePullPolicy": "IfNotPresent", "command": ["{{.Bash}}", "-c", "echo flushing; exit 0"]}]
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 30
  restartPolicy: Always
  containers:
  - name: app
    image: bash
    imagePullPolicy: IfNotPresent
    command: ["{{.Bash}}", "-c"]
    args: ["trap 'exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
`

// TestActiveDeadline: a pod past its activeDeadlineSeconds is terminated
// as the kubelet does it (pkg/kubelet/active_deadline.go, and
// generateAPIPodStatus in kubelet_pods.go): a Normal DeadlineExceeded
// event, then a graceful termination in which the defer container runs to
// completion, and the pod ends Failed with reason DeadlineExceeded and the
// kubelet's message, although its container exited 0.
func TestActiveDeadline(t *testing.T) {
	eachRuntime(t, testActiveDeadline)
}

func testActiveDeadline(t *testing.T, rt runtimeEnv) {
	a := startAgent(t, rt.Args...)
	applied := time.Now()
	a.apply("deadline", rt.manifest(t, t.TempDir(), deadlinePod, nil))
	a.waitPod("deadline", "jsonpath={.status.phase}=Failed", 60*time.Second)
	took := time.Since(applied)
	t.Logf("Failed %v after the apply (activeDeadlineSeconds 2, grace period 30 s)", took.Round(time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("the pod failed %v after it was applied, before its 2 s deadline", took)
	}
	if took > 25*time.Second {
		t.Errorf("the pod took %v to fail: after its defer container, its container exits on SIGTERM", took)
	}

	p := a.getPod("deadline")
	const message = "Pod was active on the node longer than the specified deadline"
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != message {
		t.Errorf("status reason %q, message %q; want DeadlineExceeded, %q", p.Status.Reason, p.Status.Message, message)
	}
	if st := p.container(t, "app"); st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
		t.Errorf("app: %v, want terminated with exit code 0 (it traps SIGTERM)", st)
	}
	evs := a.events("deadline")
	if countEvents(evs, "Normal DeadlineExceeded  "+message) != 1 {
		t.Errorf("want one event %q; events:\n%s", "Normal DeadlineExceeded "+message, eventList(evs))
	}
	order := []string{
		"Normal Started spec.containers{app}",
		"Normal DeadlineExceeded ",
		"Normal DeferStarted spec.deferContainers{flush}",
		"Normal DeferCompleted spec.deferContainers{flush}",
		"Normal Killing spec.containers{app}",
	}
	next := 0
	for _, e := range evs {
		if next < len(order) && strings.HasPrefix(e.String(), order[next]) {
			next++
		}
	}
	if next < len(order) {
		t.Errorf("no event %q in its place (want in order %q); events:\n%s", order[next], order, eventList(evs))
	}
}
