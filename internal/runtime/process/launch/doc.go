// Package launch starts a process in a container's context for the process
// runtime: the container's argv, environment and working directory, in a
// process group of its own; when the container has volume mounts, in a
// private mount namespace where each volume is bind-mounted at its
// mountPath; and when it has a host name of its own (the pod's), in a
// private UTS namespace with that name.
//
// Go cannot run code between fork and exec. Start, for a process with
// mounts or a host name, runs that code before the fork instead, on a
// thread it locks and moves into a mount and a UTS namespace of its own
// (namespaces are per thread, and a fork takes the forking thread's): the
// child is born in them. Every process of StartTied with mounts, a host
// name, namespaces to join or a started callback (and of Start with
// namespaces to join) is started as the init helper instead, since
// its fork must come from StartTied's one thread: the small podward-shim
// binary (Spec.Helper), or this very binary (/proc/self/exe) without one.
// MaybeRunHelper, which that binary's main calls first (podward-shim's, or
// podward's through process.MaybeRunInit), sees the helper's
// environment variable, sets the host name, does the bind mounts, waits
// for StartTied's go-ahead, and execs the real command, which so keeps the
// PID that Start returned. The helper reports a failure before exec on a
// pipe, so StartTied still fails synchronously.
//
// A process with Spec.Join (an exec in a running container) makes no
// namespace: it joins the container's own mount and UTS namespaces, opened
// by the caller (OpenNamespaces) and passed to the init helper, which
// unshares its main thread's filesystem attributes (a thread that shares
// them, as Go's threads do, may join no mount namespace), joins them from
// that thread, and resolves the working directory and the command there
// before it execs from the same thread; so the exec sees what the
// container mounted itself and the host name it set. No cgo is needed:
// nothing runs between fork and exec.
//
// Both sides of a container use it: the agent for Exec, through StartTied,
// so that an exec dies with the agent (PR_SET_PDEATHSIG, from one thread),
// and the per-container shim (package shim) for the container itself,
// through Start, so that the container outlives the agent.
//
// Both open every mount's source before they mount any, a subPath
// refusing symlinks (beneath.OpenSubPath), and mount what they opened
// through /proc/self/fd: the path it checked is the path it mounts.
//
// It imports only the standard library, golang.org/x/sys/unix and
// hostfs/beneath: the shim binary links it, and no Kubernetes package.
package launch
