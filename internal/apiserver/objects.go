package apiserver

import (
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/objects/local"
)

// Objects is the ConfigMaps and Secrets of a standalone agent
// (*local.Objects), as the API serves them.
type Objects interface {
	Apply(obj model.Object) (metav1.Object, local.Result, error)
	Get(kind objects.Kind, ns, name string) (metav1.Object, error)
	List(kind objects.Kind, ns string) []metav1.Object
	Delete(kind objects.Kind, ns, name string) (metav1.Object, error)
}

var _ Objects = (*local.Objects)(nil)

// WithObjects serves o on the configmaps and secrets paths; without it
// they answer 404. It is called before Serve.
func (s *Server) WithObjects(o Objects) *Server {
	s.objects = o
	return s
}

var errNoObjects = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
	Message: "this agent holds no ConfigMaps or Secrets",
}}

// handleObjects registers the paths of ConfigMaps and Secrets.
func (s *Server) handleObjects() {
	for _, kind := range []objects.Kind{objects.KindConfigMap, objects.KindSecret} {
		res := local.Resource(kind).Resource
		h := objectHandlers{s: s, kind: kind}
		s.handle("/api/v1/"+res, route{http.MethodGet: h.list})
		s.handle("/api/v1/namespaces/{ns}/"+res, route{http.MethodGet: h.list})
		s.handle("/api/v1/namespaces/{ns}/"+res+"/{name}", route{
			http.MethodGet:    h.get,
			http.MethodPatch:  h.apply,
			http.MethodDelete: h.delete,
		})
	}
}

// objectHandlers serve the objects of one kind.
type objectHandlers struct {
	s    *Server
	kind objects.Kind
}

// list serves GET .../configmaps and .../secrets: a ConfigMapList or a
// SecretList of the namespace (every namespace without one).
func (h objectHandlers) list(w http.ResponseWriter, r *http.Request) error {
	if h.s.objects == nil {
		return errNoObjects
	}
	objs := h.s.objects.List(h.kind, r.PathValue("ns"))
	if h.kind == objects.KindSecret {
		list := &v1.SecretList{TypeMeta: metav1.TypeMeta{Kind: "SecretList", APIVersion: "v1"}, Items: []v1.Secret{}}
		for _, o := range objs {
			list.Items = append(list.Items, *o.(*v1.Secret))
		}
		return writeJSON(w, http.StatusOK, list)
	}
	list := &v1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, Items: []v1.ConfigMap{}}
	for _, o := range objs {
		list.Items = append(list.Items, *o.(*v1.ConfigMap))
	}
	return writeJSON(w, http.StatusOK, list)
}

// get serves GET .../configmaps/{name} and .../secrets/{name}.
func (h objectHandlers) get(w http.ResponseWriter, r *http.Request) error {
	if h.s.objects == nil {
		return errNoObjects
	}
	obj, err := h.s.objects.Get(h.kind, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return h.apiError(err, r.PathValue("name"))
	}
	return writeJSON(w, http.StatusOK, obj)
}

// delete serves DELETE .../configmaps/{name} and .../secrets/{name}: the
// object as it was.
func (h objectHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if h.s.objects == nil {
		return errNoObjects
	}
	obj, err := h.s.objects.Delete(h.kind, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return h.apiError(err, r.PathValue("name"))
	}
	return writeJSON(w, http.StatusOK, obj)
}

// apply serves PATCH .../configmaps/{name} and .../secrets/{name} with an
// apply patch, the whole object: 201 when created, 200 otherwise, with
// ApplyResultHeader.
func (h objectHandlers) apply(w http.ResponseWriter, r *http.Request) error {
	if h.s.objects == nil {
		return errNoObjects
	}
	if err := checkContentType(r, ApplyPatchContentType); err != nil {
		return err
	}
	obj, err := h.read(w, r)
	if err != nil {
		return err
	}
	cur, res, err := h.s.objects.Apply(obj)
	if err != nil {
		return err
	}
	w.Header().Set(ApplyResultHeader, res.String())
	code := http.StatusOK
	if res == local.Created {
		code = http.StatusCreated
	}
	return writeJSON(w, code, cur)
}

// read decodes the one object of the request body, of the handler's kind,
// and reconciles its namespace and name with the path's, as readPod.
func (h objectHandlers) read(w http.ResponseWriter, r *http.Request) (model.Object, error) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return model.Object{}, err
	}
	m, err := model.DecodeManifest(body)
	if err != nil {
		return model.Object{}, err
	}
	if len(m.Pods) != 0 || len(m.Objects) != 1 || m.Objects[0].Kind() != string(h.kind) {
		return model.Object{}, badRequest("the request body must hold exactly one %s", h.kind)
	}
	obj := m.Objects[0]
	switch obj.Namespace {
	case "":
		obj.SetNamespace(ns)
	case ns:
	default:
		return model.Object{}, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", obj.Namespace, ns)
	}
	if obj.Meta().Name != name {
		return model.Object{}, badRequest("the name of the object (%s) does not match the name on the URL (%s)", obj.Meta().Name, name)
	}
	return obj, nil
}

// apiError gives a NotFound the API server's words (`configmaps "x" not
// found`) rather than the kubelet's, which the Getter speaks.
func (h objectHandlers) apiError(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(local.Resource(h.kind), name)
	}
	return err
}
