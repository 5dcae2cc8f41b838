// Package process is podward's runtime that runs a pod's containers as plain
// host processes: no image, no root filesystem of their own. A container is
// its command, run with the spec's args, env and working directory, in a
// process group of its own, and, with Config.Cgroups, in a cgroup of its
// own inside its pod's (package cgroups has the layout).
//
// # Resource limits
//
// With Config.Cgroups, PreparePod makes the pod's cgroup with the pod's
// limits and pid limit (podspec.PodResources, CgroupConfig.PodPidsLimit)
// and its shims' cgroup; StartContainer makes the instance's with its
// container's limits (podspec.ContainerResources) and puts both
// placements in the instance's spec: the container is forked into its
// cgroup (launch.Spec.Cgroup), the shim moves itself into its pod's once
// the container runs, and after the exit kills what is left in the
// container's cgroup and reads its OOM kill counter (any: OOMKilled). The
// watcher removes the instance's cgroup once it reported the exit;
// CleanupPod removes the pod's. An Exec runs in the running instance's
// cgroup (ExecCgroup, which the exec path sets as its launch.Spec.Cgroup),
// and in its namespaces (see "Execs in the container's namespaces").
// A Runtime that attaches finds each instance's cgroup in its spec, and
// ListPods lists a pod whose cgroup is left, for its cleanup.
//
// # Containers outlive the agent
//
// Each container instance runs under a shim of its own (package shim): the
// small podward-shim binary (Config.ShimBinary; this very binary,
// re-executed, when there is none), in a session of its own, which starts
// the container, holds it as its parent, writes its CRI log, serialises the
// signals sent to it with its reaping, and records how it ended in the
// instance's state directory, Root/pods/<podUID>/instances/<id>/. It does
// not need the agent once the container runs: killing the agent, or sending
// its process group a Ctrl-C, does not touch a container.
//
//	StartContainer ──> spec.json ──> shim started ──> container runs ──> returns
//	                   (failure or ctx ended: the shim gives up, the directory goes)
//	shim: main process exits ──> rest of its process group killed
//	                         ──> pipes drained into the log, log fsynced
//	                         ──> exit.json (atomic)  ──> shim exits
//	Runtime: shim exited (pidfd) ──> exit.json read ──> log followed to its end
//	                                 for Output ──> runtime.Event on Events()
//
// So everything an instance wrote is in its log (and was handed to Output)
// before anyone learns that it exited, and no orphan of a container
// outlives it. A shim that dies itself (SIGKILL, OOM) is seen the same way:
// with no exit.json, the runtime kills what is left of the container and
// records exit code 137, runtime.ReasonStatusUnknown, as the kubelet does.
//
// From its first start on, a Runtime keeps a few spare shims started ahead
// (Config.SpareShims, shim.Spare): StartContainer hands one the instance
// directory instead of starting its shim then, so that a start does not wait for the shim's
// exec and initialisation, only for the container's fork and exec. A spare
// holds nothing until then, and exits when its socket closes: at Close, or
// when the agent dies.
//
// One goroutine of the Runtime (its poller, an epoll set) waits for every
// watched shim's pidfd and notices FIFO, so that a running container costs
// the agent two descriptors and no goroutine.
//
// Close stops the runtime's own work (watchers, log followers, spares) but
// never a container or its shim, because stopping the agent and killing a
// pod are different things. New on the same root (in this process or a new one)
// attaches to everything the earlier Runtime left: running instances are
// watched again, exits that happened meanwhile are read from disk and
// reported by ListContainers, not as events. ListPods lists the pods with
// state left, for the agent to clean up those it does not know any more.
// One Runtime at a time holds a root (a lock file).
//
// # The pod's order without the agent
//
// Each instance's spec carries the container's place in its pod's stop
// order (shim.Order: role, start-order index, the pod's grace period, the
// stop signal), the pod's shared order directory Root/pods/<podUID>/order/
// and Root/agent.lock, which a Runtime locks while it is open. When the
// shims are told to stop by someone else while no Runtime holds the root
// (an init system at shutdown, StopLeft for `podward stop-pods`), they stop
// the pod in its order within its grace period, on their own; their exits
// are on disk for the next Runtime, as any exit while none watched.
// StartContainer forgets the pod's last such stop (shim.ResetStop).
//
// # Logs and output
//
// stdout and stderr go through package crilog into
// Root/pods/<podUID>/logs/<container>/<attempt>.log, which the shim rotates
// itself as Config.LogRotation says (the kubelet's rules: <attempt>.log.<time>,
// older ones compressed). When Config.Output is set, the runtime follows
// each instance's log, across rotations, and hands every line to it. The
// logs outlive the pod's cleanup, until RemovePodLogs removes them with
// what is left of the pod's directory (runtime.PodLogRemover).
//
// # A full disk
//
// A shim whose log (or state directory) cannot be written goes on: its
// container's output is dropped, a marker line shows the gap once the log
// takes lines again, and the shim tells the runtime through its notices
// FIFO, which needs no room on the disk: the shim's warnings and errors go
// to the runtime's log, the output it dropped to Warnings (a Warning event
// of the pod), and an exit.json it could not write to the instance's exit,
// recorded with its real exit code rather than as a lost status.
//
// # Volumes
//
// emptyDir volumes are directories under Root/pods/<podUID>/volumes (a tmpfs
// for medium Memory); hostPath volumes are checked or created as their type
// says, as the kubelet does. A container with volumeMounts runs in a private
// mount namespace where each volume is bind-mounted at its mountPath, by
// package launch (from a thread of the shim in that namespace, before the
// fork), which its execs join. A subPath is checked and
// created safely first (hostfs.PrepareSubPath); launch then opens it again
// refusing any symlink and mounts what it opened, so a container that
// swaps a component for a symlink meanwhile makes the start fail instead
// of getting what the symlink points to. Unlike the kubelet (and the CRI
// runtime), no bind mount of the subPath is left on the host: that
// mount namespace is the container's.
//
// The trade-off of having no root filesystem: a mountPath that does not
// exist on the host (say /config) must still exist as a mountpoint, and a
// mount namespace does not isolate mkdir. So the runtime creates it (and any
// missing parent) on the host, counts the pods that use it, and removes it
// in CleanupPod once the last one is gone, only if it is empty and podward
// created it. The counts live in memory, and each instance's spec records
// the paths its pod uses, so that a Runtime that attaches counts them again.
// The bind mounts themselves never show on the host. Private mount
// namespaces need root; Check rejects pods with volumeMounts otherwise.
//
// # Termination messages
//
// Every container with a terminationMessagePath (model.Default gives it
// /dev/termination-log) gets a file of its own per instance,
// Root/pods/<podUID>/instances/<id>/termination-log, bind-mounted at that
// path in its private mount namespace: a file on a file, so that the rest
// of the directory (the host's /dev) stays as it is. The mountpoint is an
// empty file the runtime creates on the host when missing and leaves there
// (see messageMountpoint), or in the volume the path is inside of. An Exec
// sees the running instance's file, so that a preStop hook may write the
// message. Once the container exited, its shim makes the exit's message
// from the file or the log's tail (podspec.TerminationMessage). Without
// root there is no mount namespace and so no file: the message then comes
// only from the log, with FallbackToLogsOnError.
//
// # Host name
//
// Where the agent may make UTS namespaces (root), each container runs in
// one of its own whose host name is the pod's (podnet.Hostname:
// spec.hostnameOverride, else spec.hostname, else the pod's name, with its
// domain under setHostnameAsFQDN), set by package launch, as a CRI
// runtime's sandbox has it; HOSTNAME says the same. A pod on the host's
// network keeps the host's name, as in Kubernetes. An Exec joins its
// container's, so a hook or probe sees what its container sees. The
// containers of a pod do not share one namespace: a container that
// changes its host name changes only its own. Without root, containers see
// the host's name (HOSTNAME is still the pod's).
//
// # resolv.conf and /etc/hosts
//
// As root, PreparePod writes the pod's resolv.conf and hosts file into its
// directory as the kubelet makes them (package podnet, from Config.DNS),
// and each container gets them bind-mounted at /etc/resolv.conf
// (read-only) and /etc/hosts, unless it mounts a volume there. The pods
// share the host's network, so the hosts file names the pod at 127.0.0.1,
// its status's podIP, and carries its hostAliases. A pod on the host's
// network gets the host's hosts file with its aliases, and keeps the
// host's /etc/resolv.conf while its DNS is the host's as it is. Without
// root, the containers see the host's files.
//
// A working directory that does not exist fails the start with
// `workingDir "/x": no such file or directory` (runc would create it in the
// container's root filesystem; here it would be the host's).
//
// # Execs in the container's namespaces
//
// Exec and ExecStream (hooks, probes, `kubectl exec`, `cp`) run their
// command in the running container's own mount and UTS namespaces, as
// runc's exec joins its container's: those of the container's main
// process, which the shim recorded in container.json (so a Runtime that
// attached after an agent restart finds it), checked through a pidfd to
// be that process still once they are open, and passed to launch's init
// helper, which joins them before it resolves the working directory and
// the command (launch.Spec.Join). So the command sees the volumes, the
// termination-message file, what the container mounted itself and the
// host name it set; a namespace the container shares with the agent (none
// of its own: no mounts, or not root) is not joined. An Exec while no
// instance runs (a hook or probe racing the container's exit) gets
// namespaces of its own instead, with the volumes and host name the
// container started with.
//
// # Execs die with the agent
//
// Exec (hooks and probes) and ExecStream (`kubectl exec`, with the
// client's stdin and, with a tty, a pty the agent holds, in a session of
// its own) run their command as a child of the agent, in a process group
// of its own, not under a shim: a probe or hook does not outlive the agent
// that waits for its result, and its result is lost with the agent; an
// interactive exec's client loses its stream then anyway. When the agent
// dies, however it dies:
//
//   - the command itself gets SIGKILL from the kernel at once
//     (launch.StartTied: PR_SET_PDEATHSIG, set from one locked thread);
//   - what it started in the background stays in its process group, which
//     the Runtime recorded in Root/execs/<pgid>.json (the group leader's
//     PID, start time and boot) before the command ran (an exec always
//     goes through the init helper, which waits for the record) and
//     until the group was killed: the next Runtime on the root kills that
//     group in New, unless its ID now belongs to another process (then
//     the group had emptied), and removes the records.
//
// A command that drops its parent-death signal (it runs a set-user-ID
// binary) lives on until that kill too. Not caught: a process that left
// the group (setsid), as for a container, and the background processes of
// an exec whose record could not be written (a full disk: the exec runs
// all the same, and the failure is logged). Whether a hook that was cut
// off runs again is the pod worker's decision (it does not). The CRI
// runtime needs none of this: its exec is containerd's ExecSync, whose
// call ends with the agent's connection, and containerd then kills the
// command.
//
// # Port-forward
//
// The pods share the host's network, so a port-forward dials the host's
// loopback; it reaches only a socket of the pod's own (PortForward): a
// TCP socket listening on the port, on the any or loopback address, that
// one of the pod's processes has open (package tcplisten reads it from
// /proc). The pod's processes are those of its running instances' cgroups
// and, with or without cgroups, their main processes' process groups.
// Any other port, the host's or another pod's, is refused
// (ErrPortNotListened).
//
// The pod-spec rules it shares with the CRI runtime (Check's common
// refusals, env and $(VAR) expansion, volume setup) are packages podspec's
// and hostfs's; this package keeps only its own refusals (no command, user
// and group settings, volumeMounts without root, mount propagation) and
// its own defaults (PATH, HOSTNAME, loopback for the downward API's IPs).
//
// It imports the model, the runtime vocabulary, podspec, hostfs, crilog,
// its sub-packages shim, launch and tcplisten, and the Kubernetes API
// types; only the agent's wiring imports it. Its sub-packages import no
// Kubernetes package: shim and launch are the shim binary
// (cmd/podward-shim), and what a shim needs of a pod the runtime resolves
// into plain fields of spec.json; tcplisten is a leaf that reads /proc.
package process
