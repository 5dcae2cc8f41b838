// Package agent is one node's pod engine: the pod workers, the prober, the
// events recorder and the set of pods the node knows, over a runtime that is
// injected (internal/runtime's contract). It admits pods (validation and the
// runtime's Check), hands every change to the pod's worker by UID, answers
// the queries of the API server and the cluster's pod source, and — with a
// Store — persists pods, checkpoints and events so that a restarted agent
// resumes its pods (Recover). What a removed pod leaves is collected: its
// stored state at once, its logs once kept for
// Config.KeepTerminatedPodLogs (podlogs.go). It is the node a node shutdown
// drives (internal/shutdown's Agent: shutdown.go) — refusing new pods
// meanwhile, and starting the pods it stopped again after the reboot or a
// cancel in standalone mode.
//
// internal/daemon assembles its callers, the daemons: `podward run` drives
// one in-process agent without a store, `podward serve` puts the unix-socket
// API server and the static-pod source in front of a durable one, and
// `podward node` adds the API server of a Kubernetes cluster as another
// source of pods.
//
// It imports the model, the planner's configuration, the pod worker, the
// prober, the events, the store's errors and the runtime contract — never a
// concrete runtime, nor any package that drives it.
package agent
