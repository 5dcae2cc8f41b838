// Package exitstatus is how a container instance ended, in the words both
// sides of a runtime use: the typed exit reasons, the exit status, and the
// termination message as the kubelet makes it (TerminationMessage: the
// file's last 4 KiB, or the log's tail with FallbackToLogsOnError, cut to
// the container's share of the pod's budget).
//
// It is a package of its own, and not part of package runtime (which
// re-exports its names as runtime.ExitReason, runtime.ExitStatus and the
// runtime.Reason* constants) nor of podspec (which keeps the rules that
// read a pod spec: where the file is mounted, each container's share), so
// that the process runtime's shim binary, which records an instance's exit
// once the container ended, links no Kubernetes package.
//
// It imports only the standard library and crilog (to read a log's tail).
package exitstatus
