package apiserver

import (
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// EphemeralContainersPath is the ephemeralcontainers subresource of a pod,
// as the Kubernetes API server serves it.
const EphemeralContainersPath = "/api/v1/namespaces/{ns}/pods/{name}/ephemeralcontainers"

// EphemeralContainers is the optional ability of a Backend to add
// ephemeral containers to a running pod (*agent.Agent's
// AddEphemeralContainers): ecs is the whole list the pod is to have. Without
// it the subresource is not served.
type EphemeralContainers interface {
	AddEphemeralContainers(ns, name string, ecs []v1.EphemeralContainer) (*v1.Pod, error)
}

// getEphemeral serves GET of the subresource: the pod, as Kubernetes
// answers it.
func (s *Server) getEphemeral(w http.ResponseWriter, r *http.Request) error {
	if _, ok := s.b.(EphemeralContainers); !ok {
		return errNotFoundPath
	}
	return s.getPod(w, r)
}

// putEphemeral serves PUT of the subresource: a Pod whose
// spec.ephemeralContainers is the list the pod is to have; the rest of the
// body is ignored, as the API server's ephemeralcontainers strategy takes
// that field only. 200 with the pod.
func (s *Server) putEphemeral(w http.ResponseWriter, r *http.Request) error {
	pod, err := subresourcePod(w, r)
	if err != nil {
		return err
	}
	return s.setEphemeral(w, r, pod.Spec.EphemeralContainers)
}

// patchEphemeral serves PATCH of the subresource, what kubectl debug sends:
// a strategic merge patch (ephemeralContainers merge by name, so the patch
// may hold the new container alone) or a JSON merge patch of the pod; only
// the patched spec.ephemeralContainers is taken. 200 with the pod.
func (s *Server) patchEphemeral(w http.ResponseWriter, r *http.Request) error {
	pod, err := s.patchedPod(w, r)
	if err != nil {
		return err
	}
	return s.setEphemeral(w, r, pod.Spec.EphemeralContainers)
}

func (s *Server) setEphemeral(w http.ResponseWriter, r *http.Request, ecs []v1.EphemeralContainer) error {
	b, ok := s.b.(EphemeralContainers)
	if !ok {
		return errNotFoundPath
	}
	p, err := b.AddEphemeralContainers(r.PathValue("ns"), r.PathValue("name"), ecs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, podObject(p))
}
