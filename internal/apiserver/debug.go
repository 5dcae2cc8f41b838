package apiserver

import (
	"net/http"
	"net/http/pprof"
)

// MetricsPath serves the agent's metrics in the Prometheus text format;
// ProfilingPath is net/http/pprof's index, with its profiles below it.
const (
	MetricsPath   = "/metrics"
	ProfilingPath = "/debug/pprof/"
)

// WithMetrics serves h (the Prometheus handler) on GET MetricsPath; without
// it the path answers 404. It is called before Serve.
func (s *Server) WithMetrics(h http.Handler) *Server {
	if h != nil {
		s.mux.Handle("GET "+MetricsPath, h)
	}
	return s
}

// WithProfiling serves net/http/pprof under ProfilingPath when on; off,
// the paths answer 404. It is called before Serve.
func (s *Server) WithProfiling(on bool) *Server {
	if on {
		handleProfiling(s.mux)
	}
	return s
}

// DebugHandler serves metrics (when set) on MetricsPath and, with
// profiling, net/http/pprof under ProfilingPath; anything else is a 404.
// It is what an agent serves on its --metrics-bind-address.
func DebugHandler(metrics http.Handler, profiling bool) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET "+MetricsPath, metrics)
	}
	if profiling {
		handleProfiling(mux)
	}
	mux.HandleFunc("/", http.NotFound)
	return mux
}

// handleProfiling registers net/http/pprof's handlers on mux, not on the
// default mux: nothing is served that the agent did not ask for.
func handleProfiling(mux *http.ServeMux) {
	mux.HandleFunc(ProfilingPath, pprof.Index)
	mux.HandleFunc(ProfilingPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(ProfilingPath+"profile", pprof.Profile)
	mux.HandleFunc(ProfilingPath+"symbol", pprof.Symbol)
	mux.HandleFunc(ProfilingPath+"trace", pprof.Trace)
}
