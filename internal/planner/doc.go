// Package planner holds podward's ordering rules — the numbered rules of
// docs/lifecycle.md — as one pure function: from a pod's spec, the observed
// state of its containers, its termination (if it has begun) and the current
// time, Next returns what to do next. It does no I/O, reads no clock and
// starts no goroutine, so each rule is a scenario in testdata/ (see
// testdata/README.md).
//
// Next runs stages, one function per rule, each with a doc comment naming
// the rule it implements:
//
//	syncing (sync.go)            the stops a container's own state asks for (a failed
//	                             probe or postStart hook, a resize that restarts it:
//	                             containerstops.go), the active deadline (start rule 6),
//	                             the restart of all containers (rule 7, restartall.go), the
//	                             kills of those stops, ephemeral containers (rule 8), init
//	                             containers and sidecars (start rules 1, 2), regular
//	                             containers (rules 3-5)
//	terminating (terminate.go)   the same container stops first; the deadline (steps 6, 8),
//	                             defer containers (step 3),
//	                             regular and ephemeral containers (step 4), sidecars
//	                             (step 5), done (step 7, once the ephemeral ones exited too)
//
// A new rule goes into the stage of its step, with a scenario of its own.
// The facts the pod worker and its status code need besides the plan are
// planner functions too, so that they are decided once: Begin and
// Termination.Shorten (termination step 1), Termination.RetryFits (step 3),
// ActiveDeadline (start rule 6), CouldRestartAll (rule 7: whether the pod
// reports AllContainersRestarting), InitsDone (the Initialized condition)
// and Phase.
//
// Every Start, Stop and Kill comes out of Next: the pod worker (package
// podworker) records facts in Observed, executes the plan and re-plans on
// every runtime event and on the plan's WakeAt (internal/archtest checks
// that no other package constructs an Action).
//
// It imports only the model and the Kubernetes API types; plannertest, which
// reads the scenario files, is for tests only.
package planner
