package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/streaming"
)

// Streams serves the pods' interactive streams for the kubelet server.
// *streaming.Server implements it.
type Streams interface {
	Resolve(ns, name, container string) (streaming.Target, error)
	ServeExec(w http.ResponseWriter, r *http.Request, t streaming.Target, cmd []string, o streaming.ExecOptions)
	ServeAttach(w http.ResponseWriter, r *http.Request, t streaming.Target, o streaming.ExecOptions)
	ServePortForward(w http.ResponseWriter, r *http.Request, ns, name, uid string) error
	Run(ctx context.Context, t streaming.Target, cmd []string) ([]byte, error)
}

var _ Streams = (*streaming.Server)(nil)

// handleStreams registers the kubelet's streaming paths
// (pkg/kubelet/server/server.go, InstallDebuggingHandlers), each with and
// without the pod's UID, which must then match:
//
//	GET|POST /exec/{ns}/{pod}[/{uid}]/{container}?command=ARG...&input=1&output=1&error=1&tty=1
//	GET|POST /attach/{ns}/{pod}[/{uid}]/{container}?...
//	GET|POST /portForward/{ns}/{pod}[/{uid}]
//	POST     /run/{ns}/{pod}[/{uid}]/{container}?cmd=ARGS (split on spaces)
//
// They are authorized as every path but a few: nodes/proxy.
func (s *KubeletServer) handleStreams(mux *http.ServeMux, st Streams) {
	for _, p := range []string{"/{ns}/{pod}/{container}", "/{ns}/{pod}/{uid}/{container}"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			mux.HandleFunc(m+" /exec"+p, s.streamHandler(st, "exec"))
			mux.HandleFunc(m+" /attach"+p, s.streamHandler(st, "attach"))
		}
		mux.HandleFunc(http.MethodPost+" /run"+p, s.streamHandler(st, "run"))
	}
	for _, p := range []string{"/{ns}/{pod}", "/{ns}/{pod}/{uid}"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			mux.HandleFunc(m+" /portForward"+p, s.streamHandler(st, "portForward"))
		}
	}
}

// streamHandler serves one kind of stream of the kubelet's paths.
func (s *KubeletServer) streamHandler(st Streams, kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, name, uid := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("uid")
		log := s.log.With("pod", ns+"/"+name, "container", r.PathValue("container"), "user", clientUser(r), "stream", kind)
		err := s.serveStream(w, r, st, kind, ns, name, uid)
		var se *streaming.Error
		switch {
		case err == nil:
			return
		case errors.Is(err, agent.ErrNotFound):
			// The kubelet's words (getExec, getPortForward).
			se = &streaming.Error{Code: http.StatusNotFound, Message: "pod does not exist"}
		case errors.As(err, &se):
		default:
			se = &streaming.Error{Code: http.StatusInternalServerError, Message: err.Error()}
		}
		lvl := slog.LevelInfo
		if se.Code >= http.StatusInternalServerError {
			lvl = slog.LevelWarn
		}
		log.Log(r.Context(), lvl, "stream refused", "code", se.Code, "message", se.Message)
		streaming.WriteError(w, se)
	}
}

// serveStream serves r, or returns why it was refused before its upgrade.
func (s *KubeletServer) serveStream(w http.ResponseWriter, r *http.Request, st Streams, kind, ns, name, uid string) error {
	if kind == "portForward" {
		// The UID is checked against the pod the forwards then go to.
		return st.ServePortForward(w, r, ns, name, uid)
	}
	t, err := st.Resolve(ns, name, r.PathValue("container"))
	if err != nil {
		return err
	}
	if uid != "" && string(t.Pod.UID) != uid {
		return &streaming.Error{Code: http.StatusNotFound, Message: "pod not found"}
	}
	switch kind {
	case "exec":
		o, err := streaming.KubeletExecOptions(r)
		if err != nil {
			return err
		}
		st.ServeExec(w, r, t, r.URL.Query()["command"], o)
	case "attach":
		o, err := streaming.KubeletExecOptions(r)
		if err != nil {
			return err
		}
		st.ServeAttach(w, r, t, o)
	case "run":
		// For legacy reasons, as the kubelet says, run takes its command
		// in one parameter.
		out, err := st.Run(r.Context(), t, strings.Split(r.URL.Query().Get("cmd"), " "))
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}
	return nil
}
