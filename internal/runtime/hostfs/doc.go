// Package hostfs holds what podward's runtimes do alike on the host's
// filesystem: the lock on a runtime's root, pod directories named by UID,
// the volumes as the kubelet sets them up (an emptyDir's directory or
// tmpfs, a hostPath's check or creation by its type), subPaths that must
// stay inside their volume (checked before anything is created, created
// with mkdirat, opened with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS or
// a walk of O_NOFOLLOW openat, in package beneath, and mounted as opened,
// as the kubelet does against CVE-2017-1002101), the atomic writer of
// configMap, secret, downwardAPI and projected volumes (AtomicWrite: the
// kubelet's ..data layout swapped with one rename; PrepareMemoryDir, the
// tmpfs of each secret and projected volume), the removal of a pod's
// volumes (tmpfs emptyDirs unmounted first), where a new instance's log output begins,
// and an instance's termination-message file (created empty and writable
// by all; exitstatus reads it back from its end).
//
// What a pod spec means apart from the host (env, $(VAR) expansion, the
// checks of volumes and mounts) is package podspec's.
//
// It imports only the standard library, golang.org/x/sys, beneath and the
// Kubernetes API types; never the model, the pod worker or the agent.
package hostfs
