// Package agent wires the pieces of a podward node together: a runtime, the
// pod workers, the events recorder and the set of pods the node knows. The
// CLI's `run` drives one in-process agent; `serve` (later) puts an API in
// front of the same agent.
//
// It imports the model, podworker, events and the runtime vocabulary; the
// concrete runtime is injected.
package agent
