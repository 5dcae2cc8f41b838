// Package cgroups is podward's cgroup layer: it finds the host's cgroup
// hierarchies (v2, unified; or v1, one per controller, as on a hybrid
// host), creates and removes the process runtime's cgroups with their
// limits, and places processes in them.
//
// # Layout
//
// As the kubelet's cgroupfs driver lays them out (pkg/kubelet/cm), under a
// root that the agent is given (--cgroup-root, "/podward" by default),
// relative to each hierarchy's mount point:
//
//	<root>/                       podward's own; never removed
//	<root>/pod<UID>/              a Guaranteed pod
//	<root>/burstable/pod<UID>/    a Burstable pod
//	<root>/besteffort/pod<UID>/   a BestEffort pod
//	<pod>/<instance ID>/          one per container instance
//	<pod>/shims/                  the pod's shims (memory and CPU only on v1)
//
// The pod's cgroup has the pod's limits (the sum of its containers', as
// the kubelet's ResourceConfigForPod) and its pid limit; each instance's
// has its container's. The shims are in the pod's cgroup, never in a
// container's, so that a container's memory limit never kills its shim
// (which also gives up its OOM score: the OOM killer takes the pod's
// containers first); the pod's memory limit has room for them (ShimMemory
// each), so that its containers may all reach their own limits. On v1 they
// stay out of the pod's pids cgroup (the pid limit never starves a shim
// of threads); on v2 a process is in every controller at once, and the
// pod's pid limit has room for them (ShimPids each).
//
// # Two halves
//
// The agent's half (Hierarchy: Create, Update, Remove, Exists) makes and
// removes cgroups; the shim's half (Placement: Enter, EnterThread, FD,
// OOMKills, Kill, CPUUsage) is plain data, directories, that the agent
// puts in an instance's spec, so that a shim (or the exec path) can place
// a process without knowing the layout. A container enters its cgroup
// before it execs its command: on v2 it is forked into it (clone3,
// CLONE_INTO_CGROUP: Placement.FD), on v1 it is forked from a thread that
// was moved into it first (Placement.EnterThread; v1 places threads one
// by one, and a child starts in its forking thread's cgroups). An exec
// session's process, which the init helper holds before it execs the
// command, is moved there by PID (Placement.Enter).
//
// It imports only the standard library and golang.org/x/sys: the shim
// binary links it, and must stay small and free of Kubernetes packages.
package cgroups
