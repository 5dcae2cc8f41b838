// Package events records Kubernetes-style events about pods (reason, type,
// field path, message) and hands them to whoever watches: `podward run`
// prints them as they happen, the API serves them. The repeats of an event
// of a series reason (SeriesReason: LogDropped) are counted in one event.
//
// It imports only the model and the Kubernetes API types.
package events
