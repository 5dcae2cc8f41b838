// Package podspec holds the pod-spec rules every podward runtime applies
// alike, so that each exists once and says one thing for one mistake:
//
//   - Check's shared refusals (CheckVolume, CheckContainer): the volume
//     kinds and emptyDir media podward supports (of configMap, secret,
//     downwardAPI and projected volumes the paths, fieldRefs and sources),
//     hostPath types, the env sources it cannot read (CheckEnv:
//     fileKeyRef), volumeDevices,
//     and the volumeMounts that name no volume, mount over the root, ask
//     for a recursively read-only mount or a subPath that leaves its
//     volume. Each names the field, Kubernetes-style, and wraps
//     runtime.ErrUnsupported;
//   - a container's environment as the kubelet makes it (Env): envFrom
//     ConfigMaps and Secrets, then env in spec order, $(VAR) references to
//     earlier variables, downward-API fieldRefs (model.Pod.FieldRef),
//     resourceFieldRefs (ResourceValue, the machine's allocatable for a
//     missing limit), configMapKeyRef and secretKeyRef read through an
//     objects.Getter; a missing object is a runtime.ContainerConfigError;
//   - $(VAR) expansion, with Kubernetes' semantics (Vars.Expand), for
//     command, args, env values and subPathExpr;
//   - the host path a volumeMount mounts, and its subPath checked and
//     created (MountSource);
//   - termination messages as the kubelet makes them (TerminationMessage):
//     where the file is mounted and each container's share of the pod's
//     12 KiB; the file's and the log's limits and the fallback to the
//     log's tail are package exitstatus's rule, which the process
//     runtime's shim applies without the Kubernetes types. Each runtime
//     keeps only how it mounts the file and when it reads it.
//
// What only one runtime refuses (a process-runtime container without a
// command, runAsUser; the CRI runtime's AppArmor or resource limits) stays
// in that runtime's Check, which calls CheckContainer first. What is done
// on the host's filesystem is package hostfs's.
//
// It imports the model, the runtime vocabulary, objects (the Getter), exitstatus, hostfs, the
// Kubernetes API types and the standard library; never the pod worker, the agent or the
// CLI. Nothing in it keeps state: every function is safe for concurrent
// use.
package podspec
