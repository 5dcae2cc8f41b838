// Package prober runs the Kubernetes probes of running containers — startup,
// readiness and liveness, with exec, httpGet, tcpSocket and grpc handlers —
// and reports their results to the pod worker.
//
// One probe of one container instance goes through these states (the
// kubelet's semantics):
//
//	AddContainer(startedAt)
//	  │ initialDelaySeconds after startedAt, then every periodSeconds,
//	  │ each attempt cut off after timeoutSeconds
//	  ▼
//	startup    Unknown ──first success──▶ Success: stops; liveness and readiness begin
//	                   └──failureThreshold failures in a row──▶ Failure: stops (the worker kills)
//	liveness   Success ──failureThreshold failures in a row──▶ Failure: stops until a new instance
//	readiness  Failure ◀──failureThreshold failures in a row── Success
//	                   ──successThreshold successes in a row──▶
//
// An instance resumed after an agent restart (ResumeContainer) whose
// readiness the worker kept starts its readiness probe at Success instead.
//
// Liveness and readiness wait for the startup probe when the container has
// one. Healthy in a Result is "ready" for readiness and "not failed" for
// startup and liveness, so a startup Result with Changed and Healthy says the
// container has started.
//
// Probing is cheap: there is no goroutine per probe. One scheduler goroutine
// keeps every probe in a min-heap keyed by its next run time (or, while an
// attempt runs, by its deadline) and sleeps on a single timer from the
// injected clock; due attempts go to a bounded pool of worker goroutines.
// Deadlines are enforced by the same heap: the scheduler cancels an attempt
// whose timeoutSeconds have passed.
//
// HTTPGet and TCPSocket run one handler at a time and also serve the pod
// worker's lifecycle hooks.
//
// On Linux a tcpSocket probe to an IP address makes its own few system calls
// on a kept socket, without the runtime's network poller, and ends the
// connection with a reset, leaving no TIME_WAIT behind (dial_linux.go).
//
// It imports the model, the Kubernetes API types, gRPC (for grpc probes)
// and golang.org/x/sys/unix; exec probes run through the Execer interface
// declared here (the process runtime's Exec).
package prober
