package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const timelineManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: tl
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[
      {"name": "upload", "image": "busybox", "command": ["true"]},
      {"name": "notify", "image": "busybox", "command": ["true"]}]'
spec:
  initContainers:
  - name: proxy
    image: busybox
    command: ["sleep", "100"]
    restartPolicy: Always
  containers:
  - name: app
    image: busybox
    command: ["sleep", "100"]
`

// TestPodTimeline follows a pod through a sidecar restart, an agent
// restart, a delete with two defer containers and its removal: its
// timeline has every instance and the termination, survives the restart
// (stored), is still served once the pod is gone, and leaves the store
// with the pod.
func TestPodTimeline(t *testing.T) {
	n := newNode(t)
	pod, err := n.a.Create(decode(t, timelineManifest))
	if err != nil {
		t.Fatal(err)
	}
	count := func(c []string, call string) int {
		return strings.Count("\n"+strings.Join(c, "\n")+"\n", "\n"+call+"\n")
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.rt.Exit(pod.UID, "proxy", 1)
	n.waitCalls("the sidecar restarted", func(c []string) bool { return count(c, "start proxy") == 2 })
	n.crash()
	n.start()
	n.waitPod("default", "tl", func(err error, running bool) bool { return err == nil && running })
	if _, err := n.a.DeletePod("default", "tl", nil); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("upload", func(c []string) bool { return slices.Contains(c, "start upload") })
	n.rt.Exit(pod.UID, "upload", 0)
	n.waitCalls("notify", func(c []string) bool { return slices.Contains(c, "start notify") })
	n.rt.Exit(pod.UID, "notify", 0)
	n.waitPod("default", "tl", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })

	p, err := n.a.PodTimeline("default", "tl")
	if err != nil {
		t.Fatalf("the timeline of a removed pod: %v", err)
	}
	if !p.Gone || p.UID != string(pod.UID) {
		t.Errorf("gone %v, uid %s", p.Gone, p.UID)
	}
	var rows []string
	for _, in := range p.Instances {
		r := in.Role.String() + " " + in.Container + "#" + string(rune('0'+in.Attempt))
		if in.Exited() {
			r += " exited"
		}
		if in.Signal != "" {
			r += " " + in.Signal
		}
		rows = append(rows, r)
	}
	want := []string{"sidecar proxy#0 exited", "main app#0 exited SIGTERM", "sidecar proxy#1 exited SIGTERM", "defer upload#0 exited", "defer notify#0 exited"}
	if !slices.Equal(rows, want) {
		t.Errorf("instances\n%q\nwant\n%q", rows, want)
	}
	var marks []string
	for _, m := range p.Marks {
		marks = append(marks, m.Kind.String()+" "+m.Detail)
	}
	if want := []string{"TerminationRequested Deleted", "Deadline 30s grace period", "Terminated "}; !slices.Equal(marks, want) {
		t.Errorf("marks %q, want %q", marks, want)
	}
	if stored, err := n.st.ListTimelines(); err != nil || len(stored) != 0 {
		t.Errorf("the store keeps %d timelines of removed pods (%v)", len(stored), err)
	}
	if _, err := n.a.PodTimeline("default", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown pod: %v", err)
	}
}

// TestPodTimelineKill: a container that ignores its stop signal is killed
// at the deadline; its instance has the signal, the kill and the exit.
func TestPodTimelineKill(t *testing.T) {
	n := newNode(t)
	n.rt.IgnoreStopSignal("app")
	pod, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	grace := int64(2)
	if _, err := n.a.DeletePod("default", "web", &grace); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("the stop signal", func(c []string) bool { return slices.Contains(c, "signal app terminated") })
	n.clk.Step(3 * time.Second) // past the deadline
	n.waitCalls("the kill", func(c []string) bool { return slices.Contains(c, "signal app killed") })
	n.waitPod("default", "web", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })
	p, err := n.a.PodTimeline("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Instances) != 1 {
		t.Fatalf("instances %+v", p.Instances)
	}
	in := p.Instances[0]
	if in.Signal != "SIGTERM" || in.SignalledAt.IsZero() || in.KilledAt.IsZero() || in.ExitCode != 137 || !in.Exited() || in.KilledAt.Before(in.SignalledAt) {
		t.Errorf("instance %+v", in)
	}
	if p.UID != string(pod.UID) {
		t.Errorf("uid %s, want %s", p.UID, pod.UID)
	}
}
