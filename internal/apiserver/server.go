package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/httplimit"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/wire"
)

// Pods is the pod API of the agent.
type Pods interface {
	// Create admits and starts a new pod; the backend owns pod afterwards.
	Create(pod *model.Pod) (*model.Pod, error)
	// Apply creates the pod, replaces the pod of the same name when its
	// spec changed (or updates it, for a change a running pod takes: see
	// agent.Apply), or does nothing.
	Apply(pod *model.Pod) (*v1.Pod, agent.ApplyResult, error)
	GetPod(ns, name string) (*v1.Pod, error)
	// ListPods returns the pods of ns ("" for all namespaces).
	ListPods(ns string) []*v1.Pod
	DeletePod(ns, name string, grace *int64) (*v1.Pod, error)
	// WatchPods sends ADDED for every existing pod of ns, then one event
	// per change, until ctx ends; the channel is closed then.
	WatchPods(ctx context.Context, ns string) <-chan agent.WatchEvent
}

// Logs finds container logs.
type Logs interface {
	// LogPath is the CRI log file of the current (or previous) instance of
	// a container of ns/name; container may be empty for a pod with one
	// regular container.
	LogPath(ns, name, container string, previous bool) (string, error)
}

// Events lists and watches the recorded events.
type Events interface {
	ListEvents(ns, name string) []v1.Event
	WatchEvents(ctx context.Context, ns string) <-chan v1.Event
}

// Backend is everything the server asks of the agent. *agent.Agent
// implements it.
type Backend interface {
	Pods
	Logs
	Events
}

// StateReporter is the optional ability of a Backend to say whether it
// saves its state (*agent.Agent's StateError): nil when it does, else why
// not. /healthz reports it.
type StateReporter interface {
	StateError() error
}

// maxBodyBytes bounds a request body (a manifest or DeleteOptions): the
// Kubernetes API server's limit, which the CLI applies to the manifests it
// reads.
const maxBodyBytes = model.MaxManifestBytes

// shutdownTimeout bounds how long Serve waits for requests in flight once
// its ctx is done (streams end at once: their context is cancelled).
const shutdownTimeout = 5 * time.Second

// Server is the HTTP API in front of a Backend. It is an http.Handler; its
// methods are safe for concurrent use.
type Server struct {
	b   Backend
	log *slog.Logger
	mux *http.ServeMux
	// shutdown is the node shutdown (WithShutdown), nil without one.
	shutdown NodeShutdown
	// objects are the ConfigMaps and Secrets (WithObjects), nil without.
	objects Objects
	// limits bound Serve's connections (WithLimits).
	limits httplimit.Limits
}

// WithLimits bounds the connections Serve holds by l instead of
// httplimit.Streaming (the kubelet's limits without the read and write
// timeouts, which would end watches and `logs -f`). It is called before
// Serve.
func (s *Server) WithLimits(l httplimit.Limits) *Server {
	s.limits = l
	return s
}

// New returns a server for b that logs failed requests to log (nil: the
// default logger).
func New(b Backend, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{b: b, log: log, mux: http.NewServeMux(), limits: httplimit.Streaming()}
	s.handle("/api/v1/pods", route{http.MethodGet: s.listPods})
	s.handle("/api/v1/namespaces/{ns}/pods", route{http.MethodGet: s.listPods, http.MethodPost: s.createPod})
	s.handle("/api/v1/namespaces/{ns}/pods/{name}", route{
		http.MethodGet:    s.getPod,
		http.MethodPatch:  s.applyPod,
		http.MethodDelete: s.deletePod,
	})
	s.handle("/api/v1/namespaces/{ns}/pods/{name}/log", route{http.MethodGet: s.getLog})
	s.handle(EphemeralContainersPath, route{http.MethodGet: s.getEphemeral, http.MethodPut: s.putEphemeral, http.MethodPatch: s.patchEphemeral})
	s.handle(ResizePath, route{http.MethodGet: s.getResize, http.MethodPut: s.putResize, http.MethodPatch: s.patchResize})
	s.handle("/api/v1/events", route{http.MethodGet: s.listEvents})
	s.handle("/api/v1/namespaces/{ns}/events", route{http.MethodGet: s.listEvents})
	s.handle(TimelinePath, route{http.MethodGet: s.getTimeline})
	s.handleObjects()
	s.handleMetrics()
	s.handleCommon()
	return s
}

// NewShutdownOnly returns a server of the node shutdown sh alone (and
// /healthz): what `podward node` serves on its local socket, since its
// pods are the cluster's API server's to serve. Every other path is a 404.
func NewShutdownOnly(sh NodeShutdown, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{log: log, mux: http.NewServeMux(), shutdown: sh, limits: httplimit.Streaming()}
	s.handleCommon()
	return s
}

// handleCommon registers what every server serves: the node shutdown,
// /healthz, and a 404 for anything else.
func (s *Server) handleCommon() {
	s.handle(wire.ShutdownPath, route{http.MethodGet: s.getShutdown, http.MethodPost: s.beginShutdown, http.MethodDelete: s.cancelShutdown})
	s.handle("/healthz", route{http.MethodGet: s.healthz})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errNotFoundPath)
	})
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve accepts connections on l until ctx is done or l fails, holding
// at most so many at once and closing idle ones (WithLimits). It reads
// the credentials of each unix-socket client (SO_PEERCRED), which the
// audit line of each stream names. When ctx is
// done it stops accepting, ends every watch and log stream (their request
// contexts derive from ctx), waits a little for other requests to finish,
// closes l and returns nil. It never touches the backend's lifecycle: the
// caller stops the agent afterwards.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:     s,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: withPeer,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.limits.Apply(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.limits.Listener(credListener{l})) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve API: %w", err)
	}
	return nil
}

// route maps methods to handlers. A handler returns an error instead of
// writing it; fail converts and logs it.
type route map[string]func(http.ResponseWriter, *http.Request) error

func (s *Server) handle(pattern string, rt route) {
	allowed := make([]string, 0, len(rt))
	for m := range rt {
		allowed = append(allowed, m)
	}
	slices.Sort(allowed)
	allow := strings.Join(allowed, ", ")
	s.mux.HandleFunc(pattern, func(rw http.ResponseWriter, r *http.Request) {
		w := &responseWriter{ResponseWriter: rw}
		h, ok := rt[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			s.fail(w, r, errMethodNotAllowed)
			return
		}
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

// responseWriter remembers whether the response has started, so that an
// error that comes after it is logged but not written.
type responseWriter struct {
	http.ResponseWriter
	started bool
}

func (w *responseWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeJSON writes obj with the given status code.
func writeJSON(w http.ResponseWriter, code int, obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, err = w.Write(append(b, '\n'))
	return err
}

// podObject sets the kind and apiVersion a single pod is served with.
func podObject(p *v1.Pod) *v1.Pod {
	p.Kind, p.APIVersion = "Pod", "v1"
	return p
}

// healthz answers GET /healthz as Kubernetes' health checks do: "ok" (200)
// while every check passes, else 500 with one line per check, "[+]NAME ok"
// or "[-]NAME failed: WHY", and "healthz check failed"; with the parameter
// verbose the lines come with a 200 too. The checks: ping (the agent
// serves) and, when the backend reports it (StateReporter), state (its
// pods' checkpoints and deletions are saved: a full state disk fails it).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	type check struct {
		name string
		err  error
	}
	checks := []check{{name: "ping"}}
	if sr, ok := s.b.(StateReporter); ok {
		checks = append(checks, check{name: "state", err: sr.StateError()})
	}
	failed := false
	var b strings.Builder
	for _, c := range checks {
		if c.err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, c.err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		b.WriteString("healthz check failed\n")
		w.WriteHeader(http.StatusInternalServerError)
		_, err := w.Write([]byte(b.String()))
		return err
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		b.WriteString("healthz check passed\n")
		_, err := w.Write([]byte(b.String()))
		return err
	}
	_, err := w.Write([]byte("ok\n"))
	return err
}
