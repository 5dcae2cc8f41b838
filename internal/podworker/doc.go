// Package podworker runs one goroutine per pod UID that alone owns the
// pod's lifecycle:
//
//	         UpdatePod(kill) or pod completed        nothing runs any more
//	Syncing ─────────────────────────────▶ Terminating ─────────────────────▶ Terminated
//
// Each transition is one-way; a pod a node shutdown terminated (kill
// reason NodeShutdown, which ends it without deleting it) gets a new
// worker from Rerun when it is to run again, with its containers' history
// (rerun.go). Everything that wants a pod gone calls
// UpdatePod with a kill; everything that wants to know whether a pod may
// still have running containers asks the Workers by UID. The worker executes
// the plans of package planner against a Runtime, re-planning on every
// input and when the plan's wake-up time comes.
//
// # One inbox, one owner
//
// Everything a pod's goroutine learns comes through its inbox (inbox.go),
// as inputs of one tagged type: a pod update, a kill, a container exit, a
// postStart hook done, a probe result, a stop signal sent, the defer images
// pre-pulled. UpdatePod, the runtime's events (HandleEvent), the prober
// (HandleProbe) and the worker's own background work only push an input
// under the inbox's short lock and ring its 1-slot channel; updates
// coalesce (the latest pod wins, a kill is sticky and the shorter grace
// period wins). The goroutine alone drains the inbox and alone owns the
// worker's state; it publishes an immutable status (the pod with its
// status, and the worker's phase) that the queries read. The one thing a
// query or a start reads before the goroutine has drained it is the
// inbox's sticky kill flag. No lock is held across I/O or a channel send.
//
// Each turn of the goroutine (podWorker.step) runs named stages:
//
//	recover ──▶ drain ──▶ observe ──▶ prepare ──▶ resize ──▶ plan ──▶ act
//	                                                          ▲        │ acted: plan again
//	                                                          └────────┘ (at most 64 rounds)
//
// recover runs in the first step after an agent restart only: it
// reconciles the checkpoint with the runtime's instances. drain takes the
// inbox's inputs; observe applies them in arrival order, the kill last;
// prepare sets the pod's volumes up, once; resize brings the running
// containers to the resources the spec asks for (KEP-1287: the node
// admits them first, against Config.Allocatable less the other pods'
// allocations, allocation.go — the one state the pods' goroutines share,
// under Workers.allocMu — then applies them, resize.go); plan asks the
// planner and emits the events a plan implies; act carries the actions
// out. The worker decides no start, stop or kill itself: a failed probe or
// postStart hook, or resources that need a restart to apply, are facts it
// records in planner.Observed, and the planner plans the stop. When a plan has nothing to do now, the goroutine sleeps until news
// or the plan's wake-up time.
//
// act records each action in the checkpoint before doing it
// (write-ahead); when the checkpoint cannot be saved (a full disk), stops
// and kills go ahead all the same, starts wait, and the save is tried again
// every second. The checkpoint has its own on-disk types (checkpoint.go),
// so that the planner's and the worker's in-memory types may change
// without changing what a restarted agent reads.
//
// It imports the model, the planner, the prober, the runtime contract, the
// pod-spec rules both runtimes apply (runtime/podspec: a pod's requests)
// and the events package.
//
// # The worker's state, in owned parts
//
// A pod's worker (podWorker) keeps, beside the pod, its phase and what the
// planner is told of the pod as a whole, its state in parts, each a small
// type in a file of its own, named for what it keeps, with the methods
// that keep its invariants — as the kubelet's podSyncStatus keeps its
// termination's timestamps:
//
//	containers   each container's state, in order and by name   containers.go
//	setup        the setup's context, whether it succeeded, its  setup.go
//	             retry, the volumes' upkeep
//	allocState   the node's allocation, the pod with it, the     allocstate.go
//	             in-place resize as the status reports it
//	termination  the deadline, who asked, the grace period the   termination.go
//	             pod shows, the deadline's events (once each)
//	saving       the last checkpoint saved, failing saves, a     saving.go
//	             deferred save to wait for
//	prePull      the defer images' pre-pull                      prepull.go
//	milestones   what the start metrics measure                  milestones.go
//
// The goroutine owns every part; the few fields set at creation that
// other goroutines use (the setup's context and its cancel, the pre-pull's
// done channel) never change. What others share with the goroutine guards
// itself: the inbox, the published status and the pod's claim on the node
// (nodeClaim: under Workers.allocMu, and an atomic). The podWorker's own
// methods are the stages of a step, which tie the parts together, and
// what talks to the runtime, the planner, the prober, the events and the
// metrics.
package podworker
