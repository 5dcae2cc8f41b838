package apiserver

import (
	"net/http"

	"github.com/podward/podward/internal/timeline"
)

// TimelinePath is where a pod's timeline is served: podward's own path
// (Kubernetes has none), beside the node shutdown's.
const TimelinePath = "/podward/v1/namespaces/{ns}/pods/{name}/timeline"

// Timelines is the optional ability of a Backend to serve the pods'
// timelines (*agent.Agent has it): the pod's of that name, or of the
// newest removed one whose records are still kept.
type Timelines interface {
	PodTimeline(ns, name string) (*timeline.Pod, error)
}

// getTimeline serves GET TimelinePath: the pod's timeline.Pod as JSON.
func (s *Server) getTimeline(w http.ResponseWriter, r *http.Request) error {
	tl, ok := s.b.(Timelines)
	if !ok {
		return errNotFoundPath
	}
	p, err := tl.PodTimeline(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, p)
}
