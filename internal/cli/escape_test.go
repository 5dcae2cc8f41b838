package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

// hostile is text a container controls: a termination message, a probe's
// output carried in an event. Printed raw, "\x1b[2J" clears the reader's
// screen and "\r" overwrites the start of the line.
const hostile = "boom\x1b[2J\rfake"

// noControl fails when out still holds ESC or CR.
func noControl(t *testing.T, what, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("%s prints a control character raw:\n%q", what, out)
	}
}

// describe pod escapes ESC as "^[" and CR as "\r" in a container's
// termination message, its last state's, and the events' messages, as
// kubectl describe does since 1.26.
func TestDescribeEscapesTerminalControls(t *testing.T) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
			Name:                 "app",
			State:                v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: hostile}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2, Message: hostile}},
		}}},
	}
	evs := []v1.Event{{Type: v1.EventTypeWarning, Reason: "Unhealthy", Message: "Liveness probe failed: " + hostile}}
	out := describePod(p, evs, time.Now())
	noControl(t, "describe pod", out)
	if got := strings.Count(out, `boom^[[2J\rfake`); got != 3 {
		t.Errorf("describe pod shows the escaped message %d times, want 3 (state, last state, event):\n%s", got, out)
	}
}

// get's table cuts a cell at its first line break with "..." and shows ESC
// as "^[", as cli-runtime's table printer does: here a container's
// terminated reason, in the STATUS column.
func TestGetTableEscapesTerminalControls(t *testing.T) {
	var b bytes.Buffer
	pr := &podPrinter{objectStream: objectStream{out: &b, format: outputTable}, table: newTable(&b)}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{
			Name:  "app",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: hostile}},
		}}},
	}
	if err := pr.printList([]*v1.Pod{p}, false); err != nil {
		t.Fatal(err)
	}
	noControl(t, "get", b.String())
	if !strings.Contains(b.String(), " boom^[[2J... ") {
		t.Errorf("get does not show the reason escaped and cut:\n%s", b.String())
	}
}

// events' table shows an event's message as get shows a cell.
func TestEventsTableEscapesTerminalControls(t *testing.T) {
	var out, errs bytes.Buffer
	pr := &eventPrinter{objectStream: objectStream{out: &out, format: outputTable}, table: newTable(&out)}
	e := v1.Event{
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web"},
		Type:           v1.EventTypeWarning, Reason: "Unhealthy", Message: "Readiness probe failed: " + hostile,
	}
	if err := pr.printListed(Streams{Out: &out, Err: &errs}, "default", []v1.Event{e}); err != nil {
		t.Fatal(err)
	}
	noControl(t, "events", out.String())
	if !strings.Contains(out.String(), "Readiness probe failed: boom^[[2J...\n") {
		t.Errorf("events does not show the message escaped and cut:\n%s", out.String())
	}
}

// run's printer escapes an event's message but prints a container's own
// output as written, as kubectl logs and kubectl run --attach do.
func TestRunPrinterEscapesEventsNotOutput(t *testing.T) {
	var b bytes.Buffer
	pod := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}}
	pr := newPrinter(&b, false, []*model.Pod{pod})
	pr.event(events.Event{Type: events.Warning, Reason: "Unhealthy", Pod: "web", FieldPath: "spec.containers{app}", Message: "Liveness probe failed: " + hostile})
	noControl(t, "run's event line", b.String())
	if !strings.Contains(b.String(), `Liveness probe failed: boom^[[2J\rfake`+"\n") {
		t.Errorf("run does not show the event's message escaped:\n%q", b.String())
	}
	b.Reset()
	pr.output(pod, "app", "stdout", []byte(hostile+"\n"))
	if !strings.HasSuffix(b.String(), hostile+"\n") {
		t.Errorf("run changed a container's output line: %q", b.String())
	}
}
