// Package shutdown is the node shutdown manager: when the machine goes
// down, it terminates the node's pods by priority, group after group, each
// within its budget, as the kubelet's graceful node shutdown does
// (pkg/kubelet/nodeshutdown, KEP-2000 and KEP-2712) — and, unlike the
// kubelet, durably: the shutdown, its groups and every pod's deadline are
// in the agent's store, so an agent killed halfway carries on with the same
// deadlines and nothing runs twice.
//
// # The trigger contract
//
// Whatever detects the shutdown — the logind watch (package logind:
// PrepareForShutdown on the system D-Bus, with its delay inhibitor lock),
// or `podward shutdown` through the agent's API — drives a *Manager with
// these three methods, and only these:
//
//	Begin(ctx, grace, reason) error  the machine is going down: terminate the
//	                                 pods. Idempotent: a shutdown already begun
//	                                 (or over) is left as it is and Begin
//	                                 returns nil. Durable: once it returns nil
//	                                 the shutdown is in the store and goes on
//	                                 after an agent restart. grace 0 means the
//	                                 configured budget; a positive grace shorter
//	                                 than it shrinks every group in proportion.
//	                                 ctx bounds the wait for the request to be
//	                                 taken, not the shutdown.
//	Cancel(ctx) error                the shutdown was called off
//	                                 (PrepareForShutdown(false)): no further
//	                                 group is terminated, new pods are admitted
//	                                 again and, in standalone mode, the pods
//	                                 the shutdown stopped start again (in
//	                                 cluster mode they stay Failed, for their
//	                                 controllers). Idempotent and durable;
//	                                 nil when no shutdown is in progress.
//	Done() <-chan struct{}           closed once the last begun shutdown is
//	                                 over: every group terminated or its budget
//	                                 spent (the logind watch then releases its
//	                                 lock), or it was cancelled. nil before any
//	                                 shutdown began.
//
// A cancelled shutdown may be followed by a new Begin, with a new Done.
// Status and ShutdownStatus answer the API and the Node's Ready condition.
//
// # Groups and budgets
//
// The configuration is the kubelet's (Groups): --shutdown-grace-period G
// and --shutdown-grace-period-critical-pods C make two groups, the pods of
// priority below 2000000000 with G-C, then the critical pods
// (system-cluster-critical, system-node-critical) with C; or
// --shutdown-grace-period-by-pod-priority lists priority=seconds, one
// group per line. A pod is in the last group whose priority is not above
// its own (the lowest group takes the pods below every group). Its
// priority is spec.priority, or, for a pod no API server admitted
// (standalone mode), the priority of its spec.priorityClassName when that
// is one of the two system classes (PodPriority).
//
//	Begin ─▶ group 1 (lowest priority) ──────▶ group 2 ──────▶ ... ─▶ Done
//	         │ every pod killed at once, with   │ starts when group 1's
//	         │ min(budget, its own grace) —     │ pods are all terminated
//	         │ defer containers, mains, then    │ or its budget is spent,
//	         │ sidecars in reverse, as a delete │ whichever comes first
//	         └─ budget 1 ───────────────────────┘
//
// The pods a shutdown terminates are those not terminated when it begins;
// from Begin until a reboot or Cancel, the node rejects new pods (reason
// NodeShutdown, the kubelet's message). After a reboot the record is
// dropped: the shutdown belonged to the previous boot.
//
// It imports nothing of podward but internal/wire, where its Status, State
// and Reason are declared once for the API server and the client (the
// names here are aliases of those): the node (the agent) and the store are
// injected through the Agent and Store interfaces declared here.
package shutdown
