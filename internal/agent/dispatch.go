package agent

import (
	"context"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/runtime"
)

// dispatch feeds runtime events to the pod workers, tells orphan
// killers about the exits of theirs, and records the runtime's warnings as
// events of their pods.
func (a *Agent) dispatch(ctx context.Context) {
	events := a.cfg.Runtime.Events()
	var warnings <-chan runtime.Warning
	if w, ok := a.cfg.Runtime.(runtime.Warner); ok {
		warnings = w.Warnings()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-warnings:
			a.recordWarning(w)
		case ev := <-events:
			a.mu.Lock()
			ch, orphan := a.orphans[ev.PodUID]
			a.mu.Unlock()
			if orphan {
				select {
				case ch <- struct{}{}:
				default:
				}
				continue
			}
			a.workers.HandleEvent(ev)
		}
	}
}

// recordWarning records a runtime's warning about a container instance as a
// Warning event of its pod; a warning about a pod the agent does not know
// (any more) is only logged.
func (a *Agent) recordWarning(w runtime.Warning) {
	a.mu.Lock()
	e := a.entryLocked(w.PodUID)
	a.mu.Unlock()
	if e == nil {
		a.log.Warn("runtime warning about an unknown pod", "podUID", w.PodUID, "container", w.Container, "reason", w.Reason, "message", w.Message)
		return
	}
	reason := events.Reason(w.Reason)
	if w.Reason == runtime.WarningLogDropped {
		reason = events.LogDropped
	}
	fieldPath := ""
	for _, ref := range e.pod.Containers() {
		if ref.Name == w.Container {
			fieldPath = ref.FieldPath()
		}
	}
	a.recorder.Eventf(e.pod, fieldPath, events.Warning, reason, "%s", w.Message)
}
