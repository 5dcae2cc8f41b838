// Package planner holds podward's ordering rules as one pure function: from a
// pod's spec, the observed state of its containers, the pod worker's phase
// and the current time, Plan returns what to do next. It does no I/O, reads
// no clock and starts no goroutine, so each rule is a row in a table test.
//
// The pod worker (package podworker) executes the plan and re-plans on every
// runtime event and on the plan's WakeAt.
//
// It imports only the model and the Kubernetes API types.
package planner
