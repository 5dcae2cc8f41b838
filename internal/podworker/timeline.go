package podworker

import (
	"time"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/timeline"
)

// Timeline is told of each container instance's life and of the pod's
// termination as the worker sees them happen, for the pod's timeline
// (timeline.History is one). Only the pod's goroutine calls it, in the
// order things happened; it must not block.
type Timeline interface {
	Note(pod timeline.PodRef, n timeline.Note)
}

// note tells the timeline n; only the pod's goroutine calls it.
func (pw *podWorker) note(n timeline.Note) {
	tl := pw.w.cfg.Timeline
	if tl == nil {
		return
	}
	tl.Note(timeline.PodRef{Namespace: pw.pod.Namespace, Name: pw.pod.Name, UID: string(pw.uid), CreatedAt: pw.pod.CreationTimestamp.Time}, n)
}

// noteInstance tells the timeline what happened at at to c's instance.
func (pw *podWorker) noteInstance(kind timeline.NoteKind, c *ctr, at time.Time) {
	pw.note(timeline.Note{Kind: kind, At: at, Container: c.ref.Name, Role: timelineRole(c.ref.Role), Attempt: c.obs.Restarts})
}

// noteExit tells the timeline how c's instance ended (c.exit).
func (pw *podWorker) noteExit(c *ctr) {
	pw.note(timeline.Note{Kind: timeline.NoteExited, At: c.exit.FinishedAt, Container: c.ref.Name, Attempt: c.obs.Restarts, ExitCode: c.exit.ExitCode, Reason: string(c.exit.Reason)})
}

// noteSignal tells the timeline c's instance got its stop signal at at.
func (pw *podWorker) noteSignal(c *ctr, at time.Time) {
	sig := "SIGTERM" // model.StopSignal's default
	if spec := pw.pod.Container(c.ref); spec != nil && spec.Lifecycle != nil && spec.Lifecycle.StopSignal != nil {
		sig = string(*spec.Lifecycle.StopSignal)
	}
	pw.note(timeline.Note{Kind: timeline.NoteSignalled, At: at, Container: c.ref.Name, Attempt: c.obs.Restarts, Signal: sig})
}

func timelineRole(r model.Role) timeline.Role {
	switch r {
	case model.RoleInit:
		return timeline.RoleInit
	case model.RoleSidecar:
		return timeline.RoleSidecar
	case model.RoleDefer:
		return timeline.RoleDefer
	default:
		return timeline.RoleMain
	}
}
