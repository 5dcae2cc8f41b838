package timeline

import "time"

// t0 is the fixture's creation time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// demoNotes is a known run, as a pod worker tells it: an init container,
// a sidecar whose liveness probe fails twice (stopped, then killed after
// its 2 s, restarted), a main container, a delete with 30 s of grace, two
// defer containers (the first fails once and is retried), then the main
// container and the sidecar stopped in order.
func demoNotes() (PodRef, []Note) {
	ref := PodRef{Namespace: "default", Name: "demo", UID: "5f0c7d2e-0000-4000-8000-000000000001", CreatedAt: t0}
	start := func(s float64, name string, role Role, attempt int) Note {
		return Note{Kind: NoteStarted, At: at(s), Container: name, Role: role, Attempt: attempt}
	}
	exit := func(s float64, name string, attempt int, code int32, reason string) Note {
		return Note{Kind: NoteExited, At: at(s), Container: name, Attempt: attempt, ExitCode: code, Reason: reason}
	}
	stop := func(s float64, name string, attempt int) []Note {
		return []Note{
			{Kind: NoteStopRequested, At: at(s), Container: name, Attempt: attempt},
			{Kind: NoteSignalled, At: at(s), Container: name, Attempt: attempt, Signal: "SIGTERM"},
		}
	}
	notes := []Note{
		start(0.1, "setup", RoleInit, 0),
		exit(0.5, "setup", 0, 0, "Completed"),
		start(0.6, "proxy", RoleSidecar, 0),
		start(0.8, "app", RoleMain, 0),
		{Kind: NoteProbeFailed, At: at(1.6), Container: "proxy", Detail: "Liveness"},
		{Kind: NoteProbeFailed, At: at(2.1), Container: "proxy", Detail: "Liveness"},
	}
	notes = append(notes, stop(2.1, "proxy", 0)...)
	notes = append(notes,
		Note{Kind: NoteKilled, At: at(4.1), Container: "proxy"},
		exit(4.1, "proxy", 0, 137, "Error"),
		start(4.2, "proxy", RoleSidecar, 1),
		Note{Kind: NoteTerminationBegan, At: at(5), Detail: "Deleted", Deadline: at(35), GraceSeconds: 30},
		start(5.0, "upload", RoleDefer, 0),
		exit(6.2, "upload", 0, 1, "Error"),
		start(6.2, "upload", RoleDefer, 1),
		exit(6.8, "upload", 1, 0, "Completed"),
		start(6.8, "notify", RoleDefer, 0),
		exit(7.0, "notify", 0, 0, "Completed"),
	)
	notes = append(notes, stop(7.0, "app", 0)...)
	notes = append(notes, exit(7.2, "app", 0, 0, "Completed"))
	notes = append(notes, stop(7.2, "proxy", 1)...)
	notes = append(notes,
		exit(7.3, "proxy", 1, 0, "Completed"),
		Note{Kind: NoteTerminated, At: at(7.3)},
	)
	return ref, notes
}

// demoPod is demoNotes kept by a History, as the agent serves it.
func demoPod() *Pod {
	h := NewHistory(Limits{})
	ref, notes := demoNotes()
	for _, n := range notes {
		h.Note(ref, n)
	}
	p, _ := h.Get(ref.UID)
	p.Now = at(9)
	return p
}
