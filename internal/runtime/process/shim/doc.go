// Package shim is the process runtime's per-container supervisor: a small
// process, the podward-shim binary (or the agent's own re-executed), that
// starts one container
// instance, holds it as its parent, writes its log and records how it
// ended, so that the container outlives the agent that asked for it. It
// also owns the instance directory, the on-disk contract between the shim
// and any agent that comes later.
//
// # The instance directory
//
//	spec.json       what to run (Spec); written by the agent before the shim starts
//	control         a FIFO; the shim reads signal numbers from it (Signal)
//	notices         a FIFO; the shim writes its notices to it (Notice) for
//	                the agent: its warnings and errors, output its log could
//	                not take, an exit it could not write to exit.json
//	shim.json       the shim's identity (Ident), written by the shim first
//	shim.log        the shim's own stderr
//	container.json  the container's main process (Started), once it runs
//	termination-log the container's termination-message file, when it has
//	                one (created by the agent, bind-mounted at its path)
//	exit.json       how it ended (Exit), written last
//
// Every file but the FIFOs and shim.log is written whole or not at all (a
// temporary file renamed into place), and none is fsynced: they are read
// on the boot of the machine they were written on only, where the page
// cache has them whatever process died; after a reboot nothing they name
// runs (see writeJSON). An exit is never lost once the shim exited.
// Identities are (PID, start time, boot ID), which a reused PID cannot
// match.
//
// # An instance's life
//
//	agent  Create ──> spec.json, control, notices
//	agent  Start ──> fork/exec the shim: its own session (setsid), stdin
//	       and stdout /dev/null, stderr shim.log, a socket as fd 3
//	shim   shim.json ──> open the log, launch the container (package launch)
//	         │ failed ──> exit.json {128 StartError} ──> report the error ──> exit
//	         └ runs ──> container.json ──> report {pid, startedAt}
//	agent  reads the report; its ctx still alive? ──> "go" : "abort"
//	shim   "go" ──> running        "abort" ──> kill the group, exit.json {128 StartError}
//	       (also when the report found the socket closed: Start gave up first)
//	       EOF (the agent died) ──> running: the next agent adopts it
//	agent  a failed start, once the shim is gone ──> SIGKILL to what is left
//	       of the group in container.json (a shim that died before its abort)
//	shim   running: stdout/stderr ──> the CRI log (crilog.LogFile: rotated
//	       as the spec says; what a full disk cannot take is dropped, and
//	       marked in the log and noticed once it can be written again);
//	       "control" and the signals
//	       the shim itself gets (TERM, INT, HUP, QUIT, USR1, USR2) ──>
//	       kill(-pgid) while the main process is not reaped (a TERM, INT
//	       or QUIT while no agent runs: in the pod's order, see below)
//	shim   main process exits (waited for without reaping) ──> FinishedAt
//	       ──> SIGKILL to what is left of its process group
//	       ──> pipes drained into the log (cut after 2s) ──> log fsynced, closed
//	       ──> main process reaped ──> the termination message (the
//	       file, or the log's tail: exitstatus.TerminationMessage)
//	       ──> exit.json ──> the shim exits
//
// A full state disk must not silence the shim: its own log (shim.log) and
// its files may not be writable, but a FIFO needs no room, so its warnings
// and errors, and an exit.json it could not write, also go to the agent as
// notices. A shim writes a notice only while an agent has the FIFO open
// (else it keeps a few and tries again every 2 s, and for a second at most
// once the container exited), and never waits for one:
// the container never depends on the agent.
//
// So everything an instance wrote is in its log before exit.json exists,
// and exit.json exists before the shim exits: an agent that sees the shim
// gone (Proc.Wait) and no exit.json knows the shim died (SIGKILL, OOM) and
// the container's status is lost (unless a notice told it). The shim
// writes to nothing the agent holds after its report but the notices FIFO,
// without ever waiting for it, and does not depend on the agent in any way
// once it got "go". Signals go through the shim, which serialises them
// with the reap: a signal can never reach a process group whose ID was
// reused.
//
// # The pod's order without an agent
//
// A spec with an Order (every spec of this version) gives the container's
// place in its pod's stop order, and a directory the pod's shims share
// (Order.PodDir, which the runtime creates):
//
//	ROLE.INDEX.ID.lock  one per running instance, flocked by its shim
//	                    from before the container starts until its
//	                    process group is gone (released by the kernel if
//	                    the shim dies), then removed
//	stop-began          made by the first shim told to stop: its time
//	                    starts the pod's grace period
//
// A stop request the shim gets itself while no agent holds Order.AgentLock
// stops the container in the pod's order: mains and init containers at
// once, sidecars once the mains and the later sidecars left, SIGKILL at the
// pod's grace deadline (order.go has the timeline). While an agent runs,
// signals go to the container at once: the agent is in charge. The order
// never makes the shim wait on a write, nor the container on the agent.
//
// MaybeRun, which the binary's main calls first (through
// process.MaybeRunInit), is the shim's entry point.
//
// It imports exitstatus (the exit reasons and the termination message's
// rule), crilog and package launch, and no Kubernetes package: it is the
// podward-shim binary, whose dependencies internal/archtest checks. Its
// agent side is used only by package process. Every shim runs with
// GOMAXPROCS=1 (shimEnv), which is all the tuning of its Go runtime that
// measurably paid.
package shim
