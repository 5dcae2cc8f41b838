package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// Pods finds the node's pods. *agent.Agent implements it.
type Pods interface {
	// GetPod returns pod ns/name with its status; an unknown pod is an
	// error the caller's server knows how to answer (agent.ErrNotFound).
	GetPod(ns, name string) (*v1.Pod, error)
}

// The kubelet's streaming timeouts (its --streaming-connection-idle-timeout
// default, and cri-streaming's stream creation timeout).
const (
	DefaultIdleTimeout           = 4 * time.Hour
	DefaultStreamCreationTimeout = remotecommandserver.DefaultStreamCreationTimeout
)

// Timeouts bound the streams a Server serves itself (those it proxies to
// a runtime's streaming server are bounded there).
type Timeouts struct {
	// Idle closes a connection none of whose streams carried data for so
	// long: the kubelet's --streaming-connection-idle-timeout. Zero is
	// DefaultIdleTimeout.
	Idle time.Duration
	// Creation closes a connection whose client has not opened the
	// streams it asked for in so long. Zero is
	// DefaultStreamCreationTimeout.
	Creation time.Duration
}

// DefaultMaxStreams caps the exec, attach and port-forward streams one
// Server serves at once (each a connection, its goroutines and, on the
// process runtime, a process). The kubelet has no cap of its own: the CRI
// runtimes' streaming servers bound their streams only by idle timeouts.
// 64 is far more interactive sessions than a node's users hold at once,
// and far fewer than the connections a server lets in
// (httplimit.DefaultMaxConns), so that streams cannot take them all.
const DefaultMaxStreams = 64

// Server serves the streams of the pods of one agent on one runtime. Its
// methods are safe for concurrent use.
type Server struct {
	pods     Pods
	rt       runtime.Runtime
	log      *slog.Logger
	idle     time.Duration
	creation time.Duration
	// slots holds a token for each stream being served.
	slots chan struct{}
}

// WithMaxStreams caps the streams s serves at once at n instead of
// DefaultMaxStreams (n <= 0 keeps the default); one over the cap is
// refused with 429 Too Many Requests. It is called before the Server
// serves.
func (s *Server) WithMaxStreams(n int) *Server {
	if n > 0 {
		s.slots = make(chan struct{}, n)
	}
	return s
}

// begin takes a stream's slot, or refuses the stream with a 429 when every
// slot is taken; the stream calls end when it is over.
func (s *Server) begin(what string) (end func(), refusal *Error) {
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, nil
	default:
		return nil, &Error{Code: http.StatusTooManyRequests, Message: fmt.Sprintf(
			"too many streams: this node serves at most %d exec, attach and port-forward streams at once; %s refused, try again later", cap(s.slots), what)}
	}
}

// Timeouts are the timeouts s serves with, the defaults filled in.
func (s *Server) Timeouts() Timeouts { return Timeouts{Idle: s.idle, Creation: s.creation} }

// WithTimeouts bounds the streams by t instead of the kubelet's defaults.
// It is called before the Server serves.
func (s *Server) WithTimeouts(t Timeouts) *Server {
	s.idle, s.creation = DefaultIdleTimeout, DefaultStreamCreationTimeout
	if t.Idle > 0 {
		s.idle = t.Idle
	}
	if t.Creation > 0 {
		s.creation = t.Creation
	}
	return s
}

// New returns the streaming server of the pods' containers on rt; log gets
// the streams that fail (nil: the default logger).
func New(pods Pods, rt runtime.Runtime, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{pods: pods, rt: rt, log: log, idle: DefaultIdleTimeout, creation: DefaultStreamCreationTimeout,
		slots: make(chan struct{}, DefaultMaxStreams)}
}

// Error is a request the Server refuses before any stream is opened: Code
// is the HTTP status, Message the kubelet's (or the API server's) words.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Target is a container a stream is for, as Resolve found it.
type Target struct {
	Pod *model.Pod
	Ref model.ContainerRef
}

// Resolve finds container of pod ns/name for an exec or an attach.
// container may be empty for a pod with a single regular container. The
// pod's unknown is GetPod's error; a container that must be named is a 400
// with the API server's message; one the pod does not have or that does
// not run (it has not started, or it terminated) is the kubelet's 500
// `container not found ("NAME")`, which kubectl prints after "unable to
// upgrade connection: " (pkg/kubelet/kubelet_pods.go, GetExec: the
// kubelet finds only running containers).
func (s *Server) Resolve(ns, name, container string) (Target, error) {
	pod, mp, err := s.pod(ns, name)
	if err != nil {
		return Target{}, err
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			names := make([]string, 0, len(pod.Spec.Containers))
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			return Target{}, &Error{Code: http.StatusBadRequest, Message: fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", name, names)}
		}
		container = pod.Spec.Containers[0].Name
	}
	notFound := &Error{Code: http.StatusInternalServerError, Message: fmt.Sprintf("container not found (%q)", container)}
	for _, ref := range mp.Containers() {
		if ref.Name == container {
			if !running(pod, mp, container) {
				return Target{}, notFound
			}
			return Target{Pod: mp, Ref: ref}, nil
		}
	}
	return Target{}, notFound
}

// pod is GetPod's pod and its model.
func (s *Server) pod(ns, name string) (*v1.Pod, *model.Pod, error) {
	pod, err := s.pods.GetPod(ns, name)
	if err != nil {
		return nil, nil, err
	}
	mp, err := model.FromV1(pod)
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	return pod, mp, nil
}

// running says whether the pod's status has container running.
func running(pod *v1.Pod, mp *model.Pod, container string) bool {
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses, mp.DeferStatuses()} {
		for _, cs := range list {
			if cs.Name == container {
				return cs.State.Running != nil
			}
		}
	}
	return false
}

// ExecOptions are the streams an exec asks for.
type ExecOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// KubeletExecOptions reads the kubelet's exec query (input, output, error,
// tty, each "1" when asked), as the API server sends it to a node. tty
// drops stderr; at least one stream must be asked for (400).
func KubeletExecOptions(r *http.Request) (ExecOptions, error) {
	o, err := remotecommandserver.NewOptions(r)
	if err != nil {
		return ExecOptions{}, &Error{Code: http.StatusBadRequest, Message: err.Error()}
	}
	return ExecOptions{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY}, nil
}

// PodExecOptions reads the query of the pods' exec subresource
// (v1.PodExecOptions: stdin, stdout, stderr, tty as booleans), as the
// agent's API takes it; stdout and stderr default to true, as the API
// server's. tty drops stderr.
func PodExecOptions(q url.Values) (ExecOptions, error) {
	o := ExecOptions{Stdout: true, Stderr: true}
	for name, dst := range map[string]*bool{"stdin": &o.Stdin, "stdout": &o.Stdout, "stderr": &o.Stderr, "tty": &o.TTY} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, &Error{Code: http.StatusBadRequest, Message: fmt.Sprintf("%s: invalid boolean %q", name, v)}
			}
			*dst = b
		}
	}
	if o.TTY {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, &Error{Code: http.StatusBadRequest, Message: "you must specify at least 1 of stdin, stdout, stderr"}
	}
	return o, nil
}

// ServeExec serves an exec of cmd in t: r is the client's upgrade request.
// The command's exit code goes back in the stream's status (a non-zero one
// as the NonZeroExitCode reason kubectl exits with). A runtime that can do
// neither kind of exec is a 500 `exec is not supported by this runtime`.
func (s *Server) ServeExec(w http.ResponseWriter, r *http.Request, t Target, cmd []string, o ExecOptions) {
	if len(cmd) == 0 {
		writeError(w, &Error{Code: http.StatusBadRequest, Message: "you must specify at least one command for the container"})
		return
	}
	end, refusal := s.begin("exec")
	if refusal != nil {
		writeError(w, refusal)
		return
	}
	defer end()
	switch rt := s.rt.(type) {
	case runtime.StreamExecer:
		ex := executor{rt: rt, t: t}
		w := closeHijacked(w)
		defer w.close()
		remotecommandserver.ServeExec(w, r, ex, t.Pod.Name, string(t.Pod.UID), t.Ref.Name, cmd,
			&remotecommandserver.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY},
			s.idle, s.creation, remotecommandserver.SupportedStreamingProtocols)
	case runtime.StreamLocator:
		u, err := rt.ExecURL(r.Context(), t.Pod, t.Ref, cmd, o.Stdin, o.Stdout, o.Stderr, o.TTY)
		if err != nil {
			s.refuse(w, t, "exec", err)
			return
		}
		s.proxy(w, r, u)
	default:
		writeError(w, &Error{Code: http.StatusInternalServerError, Message: "exec is not supported by this runtime"})
	}
}

// ServeAttach serves an attach to t: r is the client's upgrade request,
// whose streams are o's. Whether the container's side has a tty is its
// spec's, not the client's (the kubelet's GetAttach: a process's terminal
// cannot change once it started); the streams stay what the client asked
// for. The attach ends when the container exits or the client goes,
// neither of which stops the container. A runtime that can do neither
// kind of attach is a 500 `attach is not supported by this runtime`.
func (s *Server) ServeAttach(w http.ResponseWriter, r *http.Request, t Target, o ExecOptions) {
	tty := false
	if c := t.Pod.Container(t.Ref); c != nil {
		tty = c.TTY
	}
	end, refusal := s.begin("attach")
	if refusal != nil {
		writeError(w, refusal)
		return
	}
	defer end()
	switch rt := s.rt.(type) {
	case runtime.StreamAttacher:
		w := closeHijacked(w)
		defer w.close()
		remotecommandserver.ServeAttach(w, r, attacher{rt: rt, t: t}, t.Pod.Name, string(t.Pod.UID), t.Ref.Name,
			&remotecommandserver.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY},
			s.idle, s.creation, remotecommandserver.SupportedStreamingProtocols)
	case runtime.AttachLocator:
		u, err := rt.AttachURL(r.Context(), t.Pod, t.Ref, o.Stdin, o.Stdout, o.Stderr && !tty, tty)
		if err != nil {
			s.refuse(w, t, "attach", err)
			return
		}
		s.proxy(w, r, u)
	default:
		writeError(w, &Error{Code: http.StatusInternalServerError, Message: "attach is not supported by this runtime"})
	}
}

// ServePortForward serves port-forwards to pod ns/name's network: r is the
// client's upgrade request, whose streams (SPDY) or query (WebSocket: ports)
// name the ports. The pod needs no running container, as with the kubelet.
// uid, when not empty, is the UID the client means (the kubelet's
// /portForward/{ns}/{pod}/{uid}): a pod ns/name with another UID (the pod
// was deleted and made again) is the kubelet's 404 "pod not found", and
// the forwards go to the very pod whose UID was checked.
func (s *Server) ServePortForward(w http.ResponseWriter, r *http.Request, ns, name, uid string) error {
	_, mp, err := s.pod(ns, name)
	if err != nil {
		return err
	}
	if uid != "" && string(mp.UID) != uid {
		return &Error{Code: http.StatusNotFound, Message: "pod not found"}
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		return &Error{Code: http.StatusBadRequest, Message: err.Error()}
	}
	end, refusal := s.begin("port-forward")
	if refusal != nil {
		return refusal
	}
	defer end()
	seen := newPortsSeen(r.Context())
	switch rt := s.rt.(type) {
	case runtime.PortForwarder:
		w := closeHijacked(w)
		defer w.close()
		portforward.ServePortForward(w, r, forwarder{rt: rt, pod: mp, seen: seen}, mp.Name, string(mp.UID), opts,
			s.idle, s.creation, portforward.SupportedProtocols)
	case runtime.StreamLocator:
		for _, p := range opts.Ports {
			seen.observe(p)
		}
		u, err := rt.PortForwardURL(r.Context(), mp, opts.Ports)
		if err != nil {
			s.refuse(w, Target{Pod: mp}, "port-forward", err)
			return nil
		}
		s.proxy(w, r, u)
	default:
		return &Error{Code: http.StatusInternalServerError, Message: "port-forward is not supported by this runtime"}
	}
	return nil
}

// Run runs cmd in t and returns its combined output, for the kubelet's
// /run: a non-zero exit is an error carrying the output, as the kubelet's
// RunInContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go).
func (s *Server) Run(ctx context.Context, t Target, cmd []string) ([]byte, error) {
	out, code, err := s.rt.Exec(ctx, t.Pod, t.Ref, cmd)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out)
	}
	return out, nil
}

// refuse answers a stream the runtime could not locate.
func (s *Server) refuse(w http.ResponseWriter, t Target, what string, err error) {
	s.log.Info("stream refused", "stream", what, "pod", t.Pod.Key(), "podUID", t.Pod.UID, "container", t.Ref.Name, "err", err)
	if errors.Is(err, runtime.ErrNotFound) && t.Ref.Name != "" {
		writeError(w, &Error{Code: http.StatusInternalServerError, Message: fmt.Sprintf("container not found (%q)", t.Ref.Name)})
		return
	}
	writeError(w, &Error{Code: http.StatusInternalServerError, Message: err.Error()})
}

// proxy passes the client's upgrade on to the runtime's streaming server
// at u and copies both ways, as the kubelet's proxyStream does.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, u *url.URL) {
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, responder{s.log})
	h.ServeHTTP(w, r)
}

// responder logs and answers a proxy that failed.
type responder struct{ log *slog.Logger }

func (p responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	p.log.Info("stream proxy failed", "err", err)
	writeError(w, &Error{Code: http.StatusInternalServerError, Message: err.Error()})
}

// WriteError answers err as the kubelet's streaming server does: its code
// (500 for anything but an *Error) and its message as text.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Code == http.StatusTooManyRequests {
		// As the API server's max-in-flight refusal.
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Code)
	_, _ = io.WriteString(w, e.Message)
}

// executor runs the execs of one target on a StreamExecer, for ServeExec.
type executor struct {
	rt runtime.StreamExecer
	t  Target
}

var _ remotecommandserver.Executor = executor{}

func (e executor) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize, _ time.Duration) error {
	streams, stop := execStreams(in, out, errOut, tty, resize)
	defer stop()
	code, err := e.rt.ExecStream(ctx, e.t.Pod, e.t.Ref, cmd, streams)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// execStreams are the server's streams as the runtime takes them; stop
// ends the relay of the terminal sizes.
func execStreams(in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) (runtime.ExecStreams, func()) {
	streams := runtime.ExecStreams{TTY: tty}
	// Interfaces holding nil pointers are not nil: copy only the streams
	// that exist.
	if in != nil {
		streams.Stdin = in
	}
	if out != nil {
		streams.Stdout = out
	}
	if errOut != nil {
		streams.Stderr = errOut
	}
	if resize == nil {
		return streams, func() {}
	}
	sizes := make(chan runtime.TerminalSize)
	streams.Resize = sizes
	done := make(chan struct{})
	go relaySizes(resize, sizes, done)
	return streams, func() { close(done) }
}

// attacher attaches to one target on a StreamAttacher, for ServeAttach.
type attacher struct {
	rt runtime.StreamAttacher
	t  Target
}

var _ remotecommandserver.Attacher = attacher{}

func (a attacher) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	streams, stop := execStreams(in, out, errOut, tty, resize)
	defer stop()
	return a.rt.AttachStream(ctx, a.t.Pod, a.t.Ref, streams)
}

// relaySizes passes the client's terminal sizes on until from is closed or
// done is.
func relaySizes(from <-chan remotecommandserver.TerminalSize, to chan<- runtime.TerminalSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case size, ok := <-from:
			if !ok {
				return
			}
			select {
			case to <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
			case <-done:
				return
			}
		}
	}
}

// forwarder dials the ports of one pod on a PortForwarder, for
// ServePortForward.
type forwarder struct {
	rt   runtime.PortForwarder
	pod  *model.Pod
	seen *portsSeen
}

var _ portforward.PortForwarder = forwarder{}

func (f forwarder) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	f.seen.observe(port)
	return f.rt.PortForward(ctx, f.pod, port, stream)
}
