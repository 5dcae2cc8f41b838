// Package metrics is the agent's Prometheus metrics: the collectors, on a
// registry of their own (never the global one), and the handler that
// serves them in the text format on /metrics.
//
// Where the kubelet has a metric for the same thing, it has the kubelet's
// name, type, labels and buckets (kubelet 1.37, pkg/kubelet/metrics/
// metrics.go); podward's own are named podward_*. docs/api.md lists them
// all, and the kubelet's that podward does not serve.
//
// Metrics is filled where the events happen: it implements the interfaces
// their owners declare (podworker.Metrics, agent.Metrics), with every
// label value resolved when it is made, so that recording is an atomic add
// without a lookup. What is a state rather than an event — the running
// pods and containers, the store's size, the node shutdown's times — is
// read at scrape time from the Sources (AddSources).
//
// It imports the model and the packages whose types its interfaces name
// (podworker, agent, shutdown); only internal/daemon wires it.
package metrics
