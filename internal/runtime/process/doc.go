// Package process is podward's runtime that runs a pod's containers as plain
// host processes: no image, no root filesystem of their own, no cgroup limits.
// A container is its command, run with the spec's args, env and working
// directory, in a process group of its own.
//
// # What an instance is
//
// StartContainer forks and execs one instance and returns once it runs. A
// watcher goroutine per instance then waits for the main process to end:
//
//	main process exits ──> FinishedAt read from the clock
//	                  ──> SIGKILL to what is left of its process group
//	                      (the leader is not reaped yet, so the group ID
//	                      cannot have been reused)
//	                  ──> stdout/stderr pipes drained into the CRI log
//	                      (bounded: pipes held by escaped grandchildren are
//	                      cut after a short wait)
//	                  ──> leader reaped, exit code read
//	                  ──> runtime.Event sent on Events()
//
// so everything an instance wrote is in its log before anyone learns that it
// exited, and no orphan of a container outlives it. The watcher sends without
// dropping: when the Events buffer is full it waits for the consumer (or for
// Close). The watcher lives exactly as long as its process: Close stops the
// runtime's own work (a watcher then drops its event instead of waiting) but
// never a container, because stopping the agent and killing a pod are
// different things.
//
// # Logs and output
//
// stdout and stderr go through package crilog into
// Root/pods/<podUID>/logs/<container>/<attempt>.log, and every record is also
// handed to Config.Output. The logs outlive the pod's cleanup.
//
// # Volumes
//
// emptyDir volumes are directories under Root/pods/<podUID>/volumes (a tmpfs
// for medium Memory); hostPath volumes are checked or created as their type
// says, as the kubelet does. A container with volumeMounts runs in a private
// mount namespace where each volume is bind-mounted at its mountPath. Go
// cannot run code between fork and exec, so such a container is started as
// this very binary (/proc/self/exe) in "init helper" mode: MaybeRunInit,
// which main and TestMain call first, sees the helper's environment variable,
// does the bind mounts and execs the real command, which so keeps the PID
// podward started. The helper reports a failure before exec on a pipe, so
// StartContainer still fails synchronously.
//
// The trade-off of having no root filesystem: a mountPath that does not
// exist on the host (say /config) must still exist as a mountpoint, and a
// mount namespace does not isolate mkdir. So the runtime creates it (and any
// missing parent) on the host, counts the pods that use it, and removes it
// in CleanupPod once the last one is gone, only if it is empty and podward
// created it. These counts live in memory: after an agent restart, created
// mountpoints of pods that ran before are left behind. The bind mounts
// themselves never show on the host. Private mount namespaces need root;
// Check rejects pods with volumeMounts otherwise.
//
// It imports the model, the runtime vocabulary, crilog and the Kubernetes API
// types; only the agent's wiring imports it.
package process
