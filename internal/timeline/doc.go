// Package timeline is a pod's life as a Gantt chart: the data — one
// Instance per run of a container (init, sidecar, main, defer; each
// restart its own instance) and the pod's Marks (probe failures, the
// termination request, its deadline, the end) — the bounded History that
// the agent keeps of it, and its pictures: rows of cells for a terminal
// (Text) and a self-contained SVG (SVG).
//
//	worker ──Note──▶ History ──Get──▶ Pod ──▶ Layout ──▶ Text
//	                                      └────────────▶ SVG
//
// The pod worker tells the History what it does as it does it (Note);
// the agent persists and serves what the History keeps; the CLI renders
// the Pod it is served. Rendering is pure: the same Pod, Window and width
// give the same bytes, which the golden tests rely on.
//
// It imports nothing of podward: the worker, the agent, the API server,
// the client and the CLI all share its types (the wire form is Pod's
// JSON).
package timeline
