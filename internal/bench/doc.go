// Package bench is `podward bench`: it measures a real agent that it
// starts itself (`podward serve` on a private root and socket) against the
// floor of the same work done directly — fork/exec on the process runtime,
// the same CRI calls over gRPC on the CRI runtime — and reports medians,
// percentiles and ratios as a table and as JSON (issue 14).
//
// Scenarios, each selectable:
//
//	start  pods of 1 sidecar + 2 regular containers, each of which writes
//	       its own timestamp ($EPOCHREALTIME) to a file at its first line:
//	       API call ──> the last container's timestamp; sequential and in
//	       parallel rounds; the floor starts the same processes itself
//	stop   delete ──> pod gone, TERM-responsive containers (floor: signal
//	       and wait), and with two defer containers of 50 ms each and a
//	       60 s grace period (the excess over 100 ms is podward's)
//	scale  N pods × 3 long-running containers: time until all run, an
//	       idle window (agent CPU, RSS, threads, fds, goroutines when the
//	       agent serves them, the shims' PSS), delete-all time; again with
//	       an exec readiness probe every second on every container
//	churn  create+delete cycles per second with K pods in flight, then
//	       what is left (processes, fds, goroutines, the state file)
//
// Every figure is a median (with p90/p99 from 100 samples on) or a ratio
// of medians from the same run, never a single sample — except the
// whole-window figures of scale and churn, which are one measurement of a
// window each.
//
// It imports only internal/client (and the Kubernetes API and CRI types):
// it drives the agent from outside, as any client does, and reads the
// agent's process through /proc.
package bench
