// Package cri is podward's runtime that runs pods as OCI containers through
// a CRI v1 runtime (containerd 1.6+, CRI-O) over its unix socket: one pod
// sandbox per pod, one container per instance, images pulled by the CRI
// image service. It satisfies the same interfaces as package process.
//
// # What lives where
//
// The CRI runtime owns the containers, their processes and their logs; it
// writes each instance's log, in the CRI format, to
// Root/pods/<podUID>/logs/<container>/<attempt>.log (the sandbox's log
// directory), which RemovePodLogs removes once the pod is gone and cleaned
// up (the kubelet's container GC does the same). podward keeps on disk only
// the emptyDir volumes (Root/pods/<podUID>/volumes/<name>), the bind mounts
// of subPaths (Root/pods/<podUID>/volume-subpaths/<volume>/<container>/<index>,
// the kubelet's layout: the subPath as opened once checked, mounted through
// /proc/self/fd so that the CRI runtime, which resolves the host path it
// gets, resolves a mount no container can swap; CleanupPod unmounts them
// before removing anything), the termination-message files
// (Root/pods/<podUID>/containers/<name>/<attempt>-<random>, one per
// instance, mounted at its terminationMessagePath and read at its exit, as
// the kubelet does; see termination.go) and the root's lock. Everything the
// agent must find again after a restart is in the CRI runtime, as labels
// and annotations on the sandboxes and containers (see LabelManaged and the
// other Label* constants): which pod, which container, which attempt.
// Every list call filters on this podward's labels, so the containers of
// other users of the same CRI runtime are never seen nor touched.
//
// # Pods
//
// PreparePod runs the sandbox: on the host's network (no hostname: a
// host-network sandbox cannot set one) unless the pod asks for its own and
// Config.PodNetwork is on, when the CRI runtime's CNI gives it a network
// namespace and addresses (PodIPs, from PodSandboxStatus, read again at New
// for the ready sandboxes) and maps its containers' hostPorts (the
// sandbox's PortMappings, for CNI's portmap); on the host's network a
// hostPort other than the containerPort is refused (podspec.CheckHostPorts);
// PID namespace per container unless
// shareProcessNamespace; cgroup parent <Config.CgroupParent>/<qos>/pod<UID>
// as the kubelet's cgroupfs driver names it, which the runtime makes first
// with the pod's limits and pid limit (with Config.Cgroups: as the
// kubelet's pod container manager does, see podcgroup.go) and CleanupPod
// removes since the CRI runtime never does. Resources are passed as the
// kubelet passes them (podspec.ContainerResources, OOMScoreAdj,
// SandboxResources, pod-level resources included). Check refuses
// what the runtime cannot honour (volume kinds but emptyDir and hostPath,
// AppArmor, Localhost seccomp, user namespaces, limits of resources but
// cpu and memory...), naming the field. SELinux options go to the runtime
// as the kubelet passes them (the pod's to the sandbox; the container's,
// else the pod's, to each container), for it to apply where SELinux is on.
//
// # Exits
//
// Containers outlive the agent: Close never stops one, and New attaches to
// the running containers of the root. Exits are found by a relist, as the
// kubelet's PLEG finds them (see relist.go): a ListContainers of the
// running containers every RelistPeriod, poked at once by starts and
// stops, and a ContainerStatus for each container that left the list.
// Where the CRI runtime has a container event stream (not containerd 1.6),
// its stop events poke the relist, which then only runs as a safety net.
// The log of an instance is read to its end for Config.Output before its
// exit event goes out.
//
// # Stopping
//
// The CRI cannot send arbitrary signals: StopContainer has the runtime send
// the container's stop signal and SIGKILL at the timeout, and Signal
// supports only SIGKILL. The stop signal is set at creation from
// lifecycle.stopSignal (ContainerConfig.stop_signal), which runtimes that
// predate that field ignore (containerd 1.6 uses the image's STOPSIGNAL, or
// SIGTERM).
//
// The pod-spec rules it shares with the process runtime (Check's common
// refusals, env and $(VAR) expansion, volume setup) are packages podspec's
// and hostfs's; checkPod and checkContainer add only this runtime's own.
//
// It imports the model, the runtime vocabulary, podspec, hostfs, cgroups,
// crilog, the CRI API and gRPC; only the agent's wiring imports it.
package cri
