package apiserver

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// ResizePath is the resize subresource of a pod (KEP-1287), as the
// Kubernetes API server serves it.
const ResizePath = "/api/v1/namespaces/{ns}/pods/{name}/resize"

// Resizer is the optional ability of a Backend to resize a running pod's
// containers (*agent.Agent's ResizePod): patched is the pod as the client
// wants it; its containers' resources and resizePolicy are taken. Without
// it the subresource is not served.
type Resizer interface {
	ResizePod(ns, name string, patched *v1.Pod) (*v1.Pod, error)
}

// subresourcePod decodes the body of a subresource's PUT: a Pod (JSON),
// whose name, when it has one, is the path's. The subresource takes from
// it what it owns.
func subresourcePod(w http.ResponseWriter, r *http.Request) (*v1.Pod, error) {
	if err := checkContentType(r, "application/json"); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, err
	}
	var pod v1.Pod
	if err := json.Unmarshal(body, &pod); err != nil {
		return nil, badRequest("invalid Pod: %v", err)
	}
	if pod.Name != "" && pod.Name != r.PathValue("name") {
		return nil, badRequest("the name of the object (%s) does not match the name on the URL (%s)", pod.Name, r.PathValue("name"))
	}
	return &pod, nil
}

// getResize serves GET of the subresource: the pod.
func (s *Server) getResize(w http.ResponseWriter, r *http.Request) error {
	if _, ok := s.b.(Resizer); !ok {
		return errNotFoundPath
	}
	return s.getPod(w, r)
}

// putResize serves PUT of the subresource: the Pod as it is to be. 200
// with the pod.
func (s *Server) putResize(w http.ResponseWriter, r *http.Request) error {
	pod, err := subresourcePod(w, r)
	if err != nil {
		return err
	}
	return s.resize(w, r, pod)
}

// patchResize serves PATCH of the subresource, what kubectl patch
// --subresource resize sends: a strategic merge patch (containers merge by
// name) or a JSON merge patch of the pod. 200 with the pod.
func (s *Server) patchResize(w http.ResponseWriter, r *http.Request) error {
	pod, err := s.patchedPod(w, r)
	if err != nil {
		return err
	}
	return s.resize(w, r, pod)
}

func (s *Server) resize(w http.ResponseWriter, r *http.Request, pod *v1.Pod) error {
	b, ok := s.b.(Resizer)
	if !ok {
		return errNotFoundPath
	}
	p, err := b.ResizePod(r.PathValue("ns"), r.PathValue("name"), pod)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, podObject(p))
}

// patchedPod is the pod a PATCH of one of its subresources makes (what
// kubectl debug and kubectl patch --subresource send): a strategic merge
// patch (lists merged by name) or a JSON merge patch, applied to the pod
// as it is now; the caller takes from it what its subresource owns.
func (s *Server) patchedPod(w http.ResponseWriter, r *http.Request) (*v1.Pod, error) {
	ct := string(types.StrategicMergePatchType)
	if err := checkContentType(r, ct, string(types.MergePatchType)); err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "" {
		ct = mt
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, err
	}
	cur, err := s.b.GetPod(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var patched []byte
	if ct == string(types.MergePatchType) {
		patched, err = jsonpatch.MergePatch(orig, body)
	} else {
		patched, err = strategicpatch.StrategicMergePatch(orig, body, v1.Pod{})
	}
	if err != nil {
		return nil, badRequest("invalid patch: %v", err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(patched, &pod); err != nil {
		return nil, badRequest("invalid patch: %v", err)
	}
	return &pod, nil
}
