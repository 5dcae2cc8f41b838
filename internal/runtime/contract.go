package runtime

import (
	"context"
	"io"
	"net/url"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
)

// Runtime is what every container runtime implements: admission, a pod's
// shared setup and clean-up, starting and signalling container instances,
// running commands in their context, and reporting their exits.
//
// Calls that take a ctx return when it is done; none of them may block on
// the pod worker (the runtime's events are read by the agent, not by the
// worker that called). ctx is the caller's request, never the lifetime of
// the container: cancelling it must not stop a container that runs.
type Runtime interface {
	// Check says, before anything starts, whether the runtime can run the
	// pod as written. Its error wraps ErrUnsupported and names the field.
	Check(pod *model.Pod) error
	// PreparePod creates what the pod's containers share (volumes,
	// sandbox). Idempotent: it is called again after a failure.
	PreparePod(ctx context.Context, pod *model.Pod) error
	// StartContainer starts one instance of a container and returns once it
	// runs. With ctx already done it must start nothing.
	StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (Container, error)
	// Signal sends sig to a container instance; an instance that already
	// exited is not an error, an unknown one is ErrNotFound.
	Signal(ctx context.Context, id string, sig syscall.Signal) error
	// Exec runs a command in a container's context (hooks, probes) and
	// returns its combined output and exit code.
	Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error)
	// CleanupPod removes the pod's volumes and leftovers, keeping its logs
	// (PodLogRemover removes those). Called once nothing of the pod runs.
	CleanupPod(ctx context.Context, pod *model.Pod) error
	// Events reports container exits, each once, for as long as the
	// runtime is open. The channel is owned by the runtime.
	Events() <-chan Event
	// LogPath is where an instance's CRI log is (the file may not exist).
	LogPath(podUID types.UID, container string, attempt int) string
}

// ContainerLister is the optional ability a restarted agent needs to resume
// a pod: every instance the runtime has of the pod, running or exited. A
// runtime without it cannot resume pods.
type ContainerLister interface {
	ListContainers(ctx context.Context, podUID types.UID) ([]ContainerStatus, error)
}

// VolumeRefresher is the optional ability to bring a running pod's
// configMap, secret, downwardAPI and projected volumes up to date:
// RefreshVolumes writes again, atomically, each of those volumes whose
// payload changed (an object, a label or annotation, a token), as the
// kubelet's periodic remount does; subPath mounts are not updated, as in
// Kubernetes. It is idempotent, and a no-op for a pod not prepared. A
// failure is a *VolumeError naming the first volume that could not be
// written; the others are written still.
type VolumeRefresher interface {
	RefreshVolumes(ctx context.Context, pod *model.Pod) error
}

// PodLister is the optional ability to name every pod the runtime has state
// of, so that the agent can kill the orphans of pods it no longer knows.
type PodLister interface {
	ListPods() ([]types.UID, error)
}

// PodLogRemover is the optional ability to remove the logs of a pod that is
// gone, which CleanupPod keeps. The agent removes them once the pod is
// removed and kept its logs for as long as it was asked to, as the
// kubelet's container GC removes the log directory of a deleted pod
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go, evictPodLogsDirectories). A
// runtime without it keeps every pod's logs.
type PodLogRemover interface {
	// RemovePodLogs removes every log of the pod, and what is left of its
	// state once they are gone. It must be called only after CleanupPod
	// succeeded: it fails, removing nothing, while the runtime still has
	// containers of the pod. It is idempotent: a pod without logs is not
	// an error.
	RemovePodLogs(ctx context.Context, podUID types.UID) error
	// PodLogs returns the pods the runtime keeps logs of, each with when
	// its logs were last written, so that a restarted agent removes those
	// of the pods it no longer knows. The caller owns the map.
	PodLogs() (map[types.UID]time.Time, error)
}

// ImageService is the optional ability to pull images. A runtime without it
// (the process runtime) runs host binaries and has no images; with it the
// pod worker applies imagePullPolicy before each start, reports
// Pulling/Pulled/Failed, backs failed pulls off (ErrImagePull,
// ImagePullBackOff) and pre-pulls the defer containers' images while the
// pod runs.
type ImageService interface {
	// ImagePresent says whether the runtime has the image.
	ImagePresent(ctx context.Context, image string) (bool, error)
	// PullImage pulls the image with the pod's pull credentials. With
	// policy Never a missing image is ErrImageNotPresent (see the worker).
	PullImage(ctx context.Context, pod *model.Pod, image string) (PulledImage, error)
}

// GracefulStopper is the optional ability to stop a container the runtime's
// own way: send the stop signal, and SIGKILL once timeout has passed (the
// CRI's StopContainer, which cannot send other signals). It returns once the
// stop is under way; the exit comes as an Event. Runtimes without it get
// Signal(sig). Either way the worker sends SIGKILL itself at the kill time:
// containerd gives a stop up when its caller goes away, so an agent that
// restarts must not count on it.
type GracefulStopper interface {
	StopContainer(ctx context.Context, id string, sig syscall.Signal, timeout time.Duration) error
}

// ConcurrentStarter is the optional ability to take several
// StartContainer calls of one pod at once: a worker whose plan starts
// several containers together (the regular containers once the sidecars
// run) makes the calls side by side, so that the pod waits for the slowest
// start, not for their sum. Runtimes without it (or answering false) get
// the calls one after the other, in the plan's order.
type ConcurrentStarter interface {
	ConcurrentStarts() bool
}

// PodAddresser is the optional ability to give a pod a network of its own
// (the CRI runtime with CNI): PodIPs are the pod's addresses once its
// sandbox exists, the primary one first (at most one per IP family), nil
// while the pod shares the host's network (its IP is the node's then).
// The pod's status.podIP(s) report them, and its hooks' and probes'
// httpGet go to the first. The caller must not modify the slice.
type PodAddresser interface {
	PodIPs(podUID types.UID) []string
}

// Info is the optional ability to describe the runtime to a cluster: the
// Node's nodeInfo.containerRuntimeVersion and its Ready condition.
type Info interface {
	// Version returns the runtime's name and version, "containerd" and
	// "1.7.2" say.
	Version(ctx context.Context) (name, version string, err error)
	// Status is nil when the runtime is ready to run pods; otherwise it
	// says why not.
	Status(ctx context.Context) error
}

// Warner is the optional ability to report what goes wrong with a container
// instance besides its exit, for the agent to record as a Warning event of
// its pod: its output that its log could not take (a full disk), say. A
// runtime's own diagnostics of an instance go to its log; Warnings carries
// only what a pod's owner should see.
type Warner interface {
	// Warnings reports each warning once, for as long as the runtime is
	// open. The channel is owned by the runtime; a warning may be dropped
	// when nobody reads it.
	Warnings() <-chan Warning
}

// TerminalSize is the size of a client's terminal, in characters.
type TerminalSize struct {
	Width, Height uint16
}

// ExecStreams are the streams of an interactive exec (`kubectl exec`):
// each nil when the client did not ask for it. With TTY the command runs
// on a terminal of its own, whose output is Stdout alone (Stderr is nil),
// and Resize carries the client's terminal size, first and on every
// change, until it is closed or the exec ends.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// StreamExecer is the optional ability to run an interactive command in a
// container's context, the runtime serving the streams itself (the process
// runtime). A runtime with a streaming server of its own (the CRI's)
// implements StreamLocator instead; one with neither cannot serve
// `kubectl exec`.
type StreamExecer interface {
	// ExecStream runs cmd in the context of container ref of pod, as Exec
	// does, with the given streams, and returns its exit code (128+signal
	// for a signal) once it exited and its output was copied. Stdin that
	// ends closes the command's input. When ctx ends first (the client
	// went away) the command's process group is killed and the error
	// wraps ctx.Err(). A command that cannot be started is an error. The
	// caller checks that the container runs.
	ExecStream(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string, streams ExecStreams) (exitCode int, err error)
}

// StreamAttacher is the optional ability to attach to the running
// instance of a container (`kubectl attach`), the runtime serving the
// streams itself (the process runtime, whose shim holds the container's
// stdin and pty). A runtime with a streaming server of its own implements
// AttachLocator instead.
type StreamAttacher interface {
	// AttachStream copies the container's output to streams (with TTY,
	// the pty's, all on Stdout) and streams.Stdin to its stdin, and passes
	// the client's terminal sizes on, until the container exits or ctx
	// ends (the client went away); neither stops the container. Stdin is
	// passed on only when the container has stdin (spec.stdin); its end
	// closes the container's stdin when spec.stdinOnce says so, for the
	// first attach only, as Kubernetes does. ErrNotFound when no instance
	// of the container runs. The caller checks what the client asked for
	// against the spec (a tty asked of a container without one).
	AttachStream(ctx context.Context, pod *model.Pod, ref model.ContainerRef, streams ExecStreams) error
}

// AttachLocator is StreamAttacher for a runtime with a streaming server of
// its own (the CRI's Attach call): where the attach to the running
// instance of container ref is served, as StreamLocator's ExecURL.
type AttachLocator interface {
	AttachURL(ctx context.Context, pod *model.Pod, ref model.ContainerRef, stdin, stdout, stderr, tty bool) (*url.URL, error)
}

// PortForwarder is the optional ability to connect to a port of a pod's
// network (`kubectl port-forward`), the runtime serving the stream itself.
type PortForwarder interface {
	// PortForward connects to TCP port of pod's network and copies between
	// the connection and stream until either side is done or ctx ends; it
	// closes stream. A port nobody listens on is an error.
	PortForward(ctx context.Context, pod *model.Pod, port int32, stream io.ReadWriteCloser) error
}

// StreamLocator is the optional ability of a runtime that serves exec and
// port-forward streams from a streaming server of its own (the CRI's Exec
// and PortForward calls): it returns where, and the caller proxies the
// client's request there, as the kubelet does
// (pkg/kubelet/server/server.go, getExec and getPortForward).
type StreamLocator interface {
	// ExecURL is where an exec of cmd in the running instance of container
	// ref of pod is served, with the streams asked for (tty excludes
	// stderr). ErrNotFound when no instance of the container runs.
	ExecURL(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error)
	// PortForwardURL is where port-forwards to pod's network are served
	// (the ports are named by the client's request). ErrNotFound when the
	// pod has no sandbox.
	PortForwardURL(ctx context.Context, pod *model.Pod, ports []int32) (*url.URL, error)
}

// StatsProvider is the optional ability to report the resource usage of
// the pods that run, as the kubelet's stats providers do (its cgroups, or
// the CRI's ListContainerStats and ListPodSandboxStats): podward top and,
// in cluster mode, the kubelet's /stats/summary and /metrics/resource.
// A runtime without it (or without the cgroups to read) reports none.
type StatsProvider interface {
	// PodStats returns the usage of every pod with a running container,
	// read now: counters, never rates (the caller computes those from two
	// calls). A container that ends meanwhile is left out rather than
	// failing the call; ErrNoStats says the runtime cannot read usage at
	// all. ctx bounds the reads; the caller owns the result.
	PodStats(ctx context.Context) ([]PodStats, error)
}

// ResourceUpdater is the optional ability to change the resources of a
// running container instance in place (KEP-1287, the kubelet's
// UpdateContainerResources): UpdateContainerResources applies the
// resources pod's spec now gives the container ref (its requests and
// limits) to the instance id, and the pod's share of them to the pod's
// own limits, without stopping anything. It is called by the pod worker
// only, once it decided that the resize needs no restart; a call that
// changes nothing is no error. An instance that is gone is ErrNotFound;
// a limit the kernel refuses (a memory limit below what the container
// uses) is the error of the write that failed, and leaves the limits as
// they were where it can. A runtime without it resizes nothing: the pod
// worker reports such resizes as infeasible.
type ResourceUpdater interface {
	UpdateContainerResources(ctx context.Context, pod *model.Pod, ref model.ContainerRef, id string) error
}
