// Package podworker runs one goroutine per pod UID that alone owns the
// pod's lifecycle:
//
//	         UpdatePod(kill) or pod completed        nothing runs any more
//	Syncing ─────────────────────────────▶ Terminating ─────────────────────▶ Terminated
//
// Each transition is one-way. Everything that wants a pod gone calls
// UpdatePod with a kill; everything that wants to know whether a pod may
// still have running containers asks the Workers by UID. The worker executes
// the plans of package planner against a Runtime, re-planning on every
// runtime event and when the plan's wake-up time comes.
//
// It imports the model, the planner, the runtime vocabulary and the events
// package; runtimes are injected through the Runtime interface declared here.
package podworker
