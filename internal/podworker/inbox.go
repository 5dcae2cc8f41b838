package podworker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/prober"
	"github.com/podward/podward/internal/runtime"
)

// inputKind says what an input tells a pod's goroutine.
type inputKind int

// Input kinds start at one so that the zero value is never one.
const (
	// inputPod: the pod as the latest UpdatePod gave it. Coalesces: the
	// latest pod wins.
	inputPod inputKind = iota + 1
	// inputKill: UpdatePod asked for the pod's termination. Coalesces: the
	// shorter grace period wins (mergeKill).
	inputKill
	// inputExit: a container instance exited (a runtime event).
	inputExit
	// inputHookDone: a postStart hook finished, well or not.
	inputHookDone
	// inputProbe: a prober's result for an instance.
	inputProbe
	// inputStopSignalled: a container's stop signal went out after its
	// preStop hook; a prompt kill counts from that moment.
	inputStopSignalled
	// inputPrePulled: the background pre-pull of the defer containers'
	// images is over.
	inputPrePulled
	// inputVolumes: what the pod's volumes project changed (an object, a
	// token, its labels or annotations; Workers.RefreshVolumes).
	// Coalesces: one pending is enough.
	inputVolumes
)

func (k inputKind) String() string {
	switch k {
	case inputPod:
		return "Pod"
	case inputKill:
		return "Kill"
	case inputExit:
		return "Exit"
	case inputHookDone:
		return "HookDone"
	case inputProbe:
		return "Probe"
	case inputStopSignalled:
		return "StopSignalled"
	case inputPrePulled:
		return "PrePulled"
	case inputVolumes:
		return "Volumes"
	default:
		return fmt.Sprintf("inputKind(%d)", int(k))
	}
}

// input is one piece of news for a pod's goroutine. Only the field of its
// kind is set. Whoever pushes an input gives it up: the goroutine owns it
// once pushed.
type input struct {
	kind   inputKind
	pod    *model.Pod    // inputPod
	kill   *KillOptions  // inputKill: the inbox's own copy
	exit   runtime.Event // inputExit
	hook   hookResult    // inputHookDone
	probe  prober.Result // inputProbe
	signal signalNote    // inputStopSignalled
	// pulled names the defer containers whose image the pre-pull brought
	// (inputPrePulled).
	pulled []string
}

// hookResult is how a postStart hook ended.
type hookResult struct {
	container string
	id        string // the instance the hook ran for
	err       error
}

// signalNote says that a container instance's stop signal went out, and
// when.
type signalNote struct {
	container, id string
	at            time.Time
}

// inbox is the only way into a pod's goroutine: UpdatePod, the runtime's
// events, the prober and the worker's own background work (hooks, stop
// signals, the pre-pull) push inputs; the goroutine alone drains them, in
// one place (podWorker.step). Its lock is held only to append to or swap
// the slice, never across I/O or a channel send.
type inbox struct {
	notify chan struct{} // 1-slot: "there is something new"

	mu sync.Mutex
	// inputs wait in arrival order. There is at most one inputPod and one
	// inputKill: later ones coalesce into them, as the kubelet keeps one
	// pending update per pod.
	inputs []input
	// killed is sticky: a kill was recorded (by UpdatePod, or by the
	// checkpoint of a pod that was terminating). It is set when the kill
	// arrives, not when the goroutine drains it, so that a goroutine busy
	// setting the pod up reads it before each start and starts nothing more
	// (see podWorker.start), and so that IsPodTerminationRequested is true
	// at once.
	killed bool
}

func newInbox() inbox { return inbox{notify: make(chan struct{}, 1)} }

// push records one input and wakes the goroutine.
func (ib *inbox) push(in input) {
	ib.mu.Lock()
	ib.add(in)
	ib.mu.Unlock()
	ib.ring()
}

// update records an UpdatePod: its pod and, when it has one, its kill,
// with the kill's grace period resolved against that pod (effectiveKill) so
// that two kills coalesce by the grace each one means. A kill cancels the
// pod's setup at once (cancelSetup), not when the goroutine gets to it, so
// that a volume setup, image pull or start in flight is cut short.
func (ib *inbox) update(opts UpdateOptions, cancelSetup context.CancelFunc) {
	ib.mu.Lock()
	ib.add(input{kind: inputPod, pod: opts.Pod})
	if opts.Kill != nil {
		ib.add(input{kind: inputKill, kill: effectiveKill(opts.Kill, opts.Pod)})
	}
	ib.mu.Unlock()
	if opts.Kill != nil {
		cancelSetup()
	}
	ib.ring()
}

// add appends in, or coalesces it into the pending input of its kind (a
// pod or a kill); ib.mu is held.
func (ib *inbox) add(in input) {
	if in.kind == inputKill {
		ib.killed = true
	}
	if in.kind == inputVolumes && slices.ContainsFunc(ib.inputs, func(p input) bool { return p.kind == inputVolumes }) {
		return
	}
	if in.kind == inputPod || in.kind == inputKill {
		for i := range ib.inputs {
			p := &ib.inputs[i]
			if p.kind != in.kind {
				continue
			}
			if in.kind == inputPod {
				p.pod = in.pod
			} else {
				p.kill = mergeKill(p.kill, in.kill)
			}
			return
		}
		if in.kind == inputKill {
			in.kill = mergeKill(nil, in.kill)
		}
	}
	ib.inputs = append(ib.inputs, in)
}

// markKilled records a kill that needs no input: the restored checkpoint
// of a pod that was already terminating.
func (ib *inbox) markKilled() {
	ib.mu.Lock()
	ib.killed = true
	ib.mu.Unlock()
}

// killRecorded reports whether a kill was ever recorded.
func (ib *inbox) killRecorded() bool {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.killed
}

// drain takes every waiting input, in arrival order.
func (ib *inbox) drain() []input {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	in := ib.inputs
	ib.inputs = nil
	return in
}

// ring wakes the goroutine without ever blocking.
func (ib *inbox) ring() {
	select {
	case ib.notify <- struct{}{}:
	default:
	}
}

// effectiveKill is a copy of kill whose grace period is set: its own, else
// the pod's terminationGracePeriodSeconds. A kill without a grace period
// means the pod's, not "none": resolved before two kills are compared, a
// plain delete is never outbid by a later, longer --grace-period, as the
// kubelet resolves each update's grace against its pod
// (pkg/kubelet/pod_workers.go, calculateEffectiveGracePeriod).
func effectiveKill(kill *KillOptions, pod *model.Pod) *KillOptions {
	k := *kill
	g := pod.GracePeriodSeconds()
	if kill.GracePeriodSeconds != nil {
		g = *kill.GracePeriodSeconds
	}
	k.GracePeriodSeconds = &g
	return &k
}

// mergeKill coalesces two pending kills: the shorter grace period wins,
// and the first reason but that a delete outranks a node shutdown's kill.
// It returns a copy, so the caller's KillOptions is never kept.
func mergeKill(old, next *KillOptions) *KillOptions {
	if old == nil {
		k := *next
		if next.GracePeriodSeconds != nil {
			g := *next.GracePeriodSeconds
			k.GracePeriodSeconds = &g
		}
		return &k
	}
	k := *old
	if k.Reason == TerminationNodeShutdown && next.Reason != TerminationNodeShutdown {
		// A delete that comes with a node shutdown's kill still deletes
		// the pod.
		k.Reason = next.Reason
	}
	if next.GracePeriodSeconds != nil && (k.GracePeriodSeconds == nil || *next.GracePeriodSeconds < *k.GracePeriodSeconds) {
		g := *next.GracePeriodSeconds
		k.GracePeriodSeconds = &g
	}
	return &k
}
