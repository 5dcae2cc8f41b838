// Package logind tells podward that the machine is shutting down, the way
// the kubelet's graceful node shutdown learns it (pkg/kubelet/nodeshutdown,
// KEP-2000): it holds a systemd-logind *delay* inhibitor lock over the
// system D-Bus, watches logind's PrepareForShutdown signal, starts the node
// shutdown when it comes and releases the lock once the shutdown is done or
// its budget is spent — logind powers the machine off only then.
//
// A Watcher speaks to org.freedesktop.login1 (the Manager's Inhibit method,
// its InhibitDelayMaxUSec property, its PrepareForShutdown signal) and
// triggers a Shutdowner, the node shutdown declared here by what the
// watcher needs of it. Its life, one goroutine (Run) owning all of it:
//
//	Run ── connect, read InhibitDelayMaxUSec ──below the budget──▶ write the drop-in,
//	 │                                                             ask logind to reload
//	 ├─ no system bus, or no logind on it ──▶ said once in the log; Run returns
//	 └─ Inhibit("shutdown", "podward", …, "delay") = fd
//	                │
//	            ┌───▼──┐ PrepareForShutdown(true)    ┌──────────────┐
//	            │ idle │ ──────────────────────────▶ │ shuttingDown │ Begin(grace)
//	            │ (fd) │ ◀────────────────────────── │     (fd)     │
//	            └───▲──┘ PrepareForShutdown(false):  └──────┬───────┘
//	                │    Cancel, the fd still held          │ Done, or grace spent:
//	                │                                ┌──────▼───────┐ close the fd;
//	                └─────────────────────────────── │   released   │ logind goes on
//	                  PrepareForShutdown(false):     └──────────────┘
//	                  Cancel, Inhibit again
//
// grace is the configured budget, or logind's InhibitDelayMaxUSec when it is
// lower (logind would not wait longer). When the bus connection is lost,
// the watcher keeps its state and its fd, dials again every second, and
// takes a new lock (closing the old one) once it is back, as the kubelet
// restarts its watch. Once connected, at start or again, a logind already
// PreparingForShutdown (its signal sent before the watcher could hear it:
// an agent restarted during the shutdown) is a PrepareForShutdown(true).
//
// Where podward differs from the kubelet: a PrepareForShutdown(false) that
// comes while the pods are still being stopped cancels that shutdown at
// once (the kubelet handles it after its shutdown ends); a
// PrepareForShutdown that does not come from logind's own connection is
// ignored (the kubelet would shut the node down for any sender); an
// InhibitDelayMaxUSec that stays below the budget after the reload is a
// warning and a shorter grace (the kubelet then does not watch for the
// shutdown at all); a shutdown already announced when the watcher starts
// is carried out (the kubelet waits for a signal that has come already);
// and logind being absent never stops the agent.
//
// # Wiring
//
// `podward serve` and `podward node` start one Watcher each, when a
// shutdown budget is configured, with internal/shutdown's Manager as the
// Shutdowner — its Cancel and Done as they are, its Begin given the reason
// (shutdown.ReasonLogind) by a one-method adapter in internal/daemon — the
// sum of the groups' budgets as Budget, and `go w.Run(ctx)` for the
// daemon's lifetime. Run returns by itself on a machine without logind.
//
// It imports nothing of podward: internal/daemon wires it to the node
// shutdown.
package logind
