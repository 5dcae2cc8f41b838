package apiserver

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/podward/podward/internal/streaming"
)

// Streams serves the pods' interactive streams. *streaming.Server
// implements it.
type Streams interface {
	Resolve(ns, name, container string) (streaming.Target, error)
	ServeExec(w http.ResponseWriter, r *http.Request, t streaming.Target, cmd []string, o streaming.ExecOptions)
	ServeAttach(w http.ResponseWriter, r *http.Request, t streaming.Target, o streaming.ExecOptions)
	ServePortForward(w http.ResponseWriter, r *http.Request, ns, name, uid string) error
}

var _ Streams = (*streaming.Server)(nil)

// WithStreams serves the pods' exec, attach and portforward subresources
// with st, as the API server does (GET or POST, upgraded to SPDY or
// WebSocket):
//
//	/api/v1/namespaces/{ns}/pods/{name}/exec?container=C&command=ARG...&stdin=&stdout=&stderr=&tty=
//	/api/v1/namespaces/{ns}/pods/{name}/attach?container=C&...
//	/api/v1/namespaces/{ns}/pods/{name}/portforward   (SPDY: the ports in the streams' headers)
//
// Each exec and attach served, and each port a port-forward forwards to,
// is logged at Info as one "audit" line (audit): the verb, the pod, the
// container, the command (quoteArgv) or the port, and the client's
// credentials (Serve reads them from the socket).
//
// Without it the paths answer 404. A refusal before the upgrade is a
// Status (an unknown pod, a container to name) or, for one the kubelet
// refuses (a container that does not run), the kubelet's text. It is
// called before Serve.
func (s *Server) WithStreams(st Streams) *Server {
	for _, sub := range []string{"exec", "attach"} {
		s.mux.HandleFunc("/api/v1/namespaces/{ns}/pods/{name}/"+sub, s.streamHandler(func(w http.ResponseWriter, r *http.Request) error {
			q := r.URL.Query()
			t, err := st.Resolve(r.PathValue("ns"), r.PathValue("name"), q.Get("container"))
			if err != nil {
				return err
			}
			o, err := streaming.PodExecOptions(q)
			if err != nil {
				return err
			}
			if sub == "attach" {
				s.audit(r, "attach", t.Pod.Key(), t.Ref.Name)
				st.ServeAttach(w, r, t, o)
				return nil
			}
			s.audit(r, "exec", t.Pod.Key(), t.Ref.Name, slog.String("command", quoteArgv(q["command"])))
			st.ServeExec(w, r, t, q["command"], o)
			return nil
		}))
	}
	s.mux.HandleFunc("/api/v1/namespaces/{ns}/pods/{name}/portforward", s.streamHandler(func(w http.ResponseWriter, r *http.Request) error {
		ns, name := r.PathValue("ns"), r.PathValue("name")
		ctx := streaming.ObservePorts(r.Context(), func(port int32) {
			s.audit(r, "portforward", ns+"/"+name, "", slog.Int("port", int(port)))
		})
		return st.ServePortForward(w, r.WithContext(ctx), ns, name, "")
	}))
	return s
}

// streamHandler serves a stream's GET and POST with h, whose errors before
// the upgrade are answered here. The response writer is the server's own,
// which the upgrade hijacks.
func (s *Server) streamHandler(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			s.fail(w, r, errMethodNotAllowed)
			return
		}
		err := h(w, r)
		var se *streaming.Error
		switch {
		case err == nil:
		case errors.As(err, &se) && (se.Code >= http.StatusInternalServerError || se.Code == http.StatusTooManyRequests):
			s.log.Info("stream refused", "path", r.URL.Path, "err", err)
			streaming.WriteError(w, err)
		case errors.As(err, &se):
			s.fail(w, r, badRequest("%s", se.Message))
		default:
			s.fail(w, r, err)
		}
	}
}
