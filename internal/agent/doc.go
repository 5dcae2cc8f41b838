// Package agent wires the pieces of a podward node together: a runtime, the
// pod workers, the events recorder and the set of pods the node knows.
// internal/node builds one for each daemon: in memory for `run`, durable
// (recovered from its store) behind the API server for `serve` and behind
// the cluster's API server for `node`.
//
// It imports the model, podworker, events and the runtime vocabulary; the
// concrete runtime is injected.
package agent
