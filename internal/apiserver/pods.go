package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// ApplyPatchContentType is the Content-Type of an apply (PATCH) request,
// Kubernetes' server-side apply type.
const ApplyPatchContentType = "application/apply-patch+yaml"

// ApplyResultHeader is the response header of an apply that says what it
// did, in kubectl's words: "created", "unchanged" or "configured" (the pod
// is being replaced by one with the new spec, or took the change itself: a
// lower activeDeadlineSeconds).
const ApplyResultHeader = "Podward-Apply-Result"

// applyWords are kubectl's words for the apply outcomes.
var applyWords = map[agent.ApplyResult]string{
	agent.Created:   "created",
	agent.Unchanged: "unchanged",
	agent.Replaced:  "configured",
	agent.Updated:   "configured",
}

// listPods serves GET .../pods: a PodList, or with watch=true a stream of
// watch events.
func (s *Server) listPods(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	q := r.URL.Query()
	sel, err := parseSelector(q, podFieldLabels)
	if err != nil {
		return err
	}
	watch, err := boolParam(q, "watch")
	if err != nil {
		return err
	}
	if watch {
		return s.watchPods(w, r, ns, sel)
	}
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{}}
	for _, p := range s.b.ListPods(ns) {
		if sel.matchesPod(p) {
			list.Items = append(list.Items, *p)
		}
	}
	return writeJSON(w, http.StatusOK, list)
}

// watchPods streams the pods of ns that match sel: ADDED for each one now,
// then each change, until the client goes or the server stops. A pod that
// stops matching is sent as DELETED, one that starts matching as ADDED, as
// Kubernetes does.
func (s *Server) watchPods(w http.ResponseWriter, r *http.Request, ns string, sel selector) error {
	first, ch := s.syncedWatch(r.Context(), ns)
	st, err := startStream(w)
	if err != nil {
		return err
	}
	sent := map[types.UID]bool{}
	for ev := range withFirst(first, ch) {
		uid := ev.Pod.UID
		typ := ev.Type
		switch match := sel.matchesPod(ev.Pod); {
		case typ == "DELETED":
			// The pod may be a stub holding only its UID.
			if !sent[uid] {
				continue
			}
			delete(sent, uid)
		case match && !sent[uid]:
			typ = "ADDED"
			sent[uid] = true
		case match:
		case sent[uid]:
			typ = "DELETED"
			delete(sent, uid)
		default:
			continue
		}
		if err := st.send(typ, podObject(ev.Pod)); err != nil {
			return err
		}
	}
	return nil
}

// syncTimeout bounds how long syncedWatch waits for the first event of a
// watch whose pods may all have gone in the meantime.
const syncTimeout = time.Second

// syncedWatch starts a watch of the pods of ns and returns once the watch
// has taken its first look at them, with the first event if it already
// came. The agent's watch looks in a goroutine of its own; a client that
// opens a watch, then deletes a pod and waits for its DELETED event relies
// on that look having been taken before the response starts, or a pod
// removed in between would be neither ADDED nor DELETED. When ns has pods
// the first event proves the look was taken; when it has none, there is
// nothing to miss.
func (s *Server) syncedWatch(ctx context.Context, ns string) (*agent.WatchEvent, <-chan agent.WatchEvent) {
	ch := s.b.WatchPods(ctx, ns)
	if len(s.b.ListPods(ns)) == 0 {
		return nil, ch
	}
	t := time.NewTimer(syncTimeout)
	defer t.Stop()
	select {
	case ev, ok := <-ch:
		if ok {
			return &ev, ch
		}
	case <-t.C: // they went meanwhile
	case <-ctx.Done():
	}
	return nil, ch
}

// withFirst yields first (when set), then what ch yields.
func withFirst(first *agent.WatchEvent, ch <-chan agent.WatchEvent) iter.Seq[agent.WatchEvent] {
	return func(yield func(agent.WatchEvent) bool) {
		if first != nil && !yield(*first) {
			return
		}
		for ev := range ch {
			if !yield(ev) {
				return
			}
		}
	}
}

// createPod serves POST .../pods: 201 with the new pod.
func (s *Server) createPod(w http.ResponseWriter, r *http.Request) error {
	if err := checkContentType(r, "application/json", "application/yaml", "application/x-yaml", "text/yaml"); err != nil {
		return err
	}
	pod, err := readPod(w, r, r.PathValue("ns"), "")
	if err != nil {
		return err
	}
	name := pod.Name
	created, err := s.b.Create(pod)
	if err != nil {
		return forPod(name, err)
	}
	out, err := s.b.GetPod(created.Namespace, created.Name)
	if err != nil {
		// Removed already (deleted at once): answer with what was created.
		out = created.Pod.DeepCopy()
	}
	return writeJSON(w, http.StatusCreated, podObject(out))
}

// getPod serves GET .../pods/{name}.
func (s *Server) getPod(w http.ResponseWriter, r *http.Request) error {
	p, err := s.b.GetPod(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, podObject(p))
}

// applyPod serves PATCH .../pods/{name} with an apply patch: the body is
// the whole pod. 201 when created, 200 otherwise, with ApplyResultHeader.
func (s *Server) applyPod(w http.ResponseWriter, r *http.Request) error {
	if err := checkContentType(r, ApplyPatchContentType); err != nil {
		return err
	}
	pod, err := readPod(w, r, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	p, res, err := s.b.Apply(pod)
	if err != nil {
		return err
	}
	w.Header().Set(ApplyResultHeader, applyWords[res])
	code := http.StatusOK
	if res == agent.Created {
		code = http.StatusCreated
	}
	return writeJSON(w, code, podObject(p))
}

// deletePod serves DELETE .../pods/{name}: the grace period comes from the
// gracePeriodSeconds parameter or a DeleteOptions body; a UID precondition
// that does not hold is a 409. 200 with the pod as it is now (its
// deletionTimestamp set once the termination started). A grace period of
// 0 is a forced delete, as in Kubernetes: the pod is gone from the API at
// once while the agent still stops its containers.
func (s *Server) deletePod(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var opts metav1.DeleteOptions
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return badRequest("invalid DeleteOptions: %v", err)
		}
	}
	grace, ok, err := intParam(r.URL.Query(), "gracePeriodSeconds")
	if err != nil {
		return err
	}
	if ok {
		opts.GracePeriodSeconds = &grace
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		return badRequest("gracePeriodSeconds must be greater than or equal to 0, got %d", *opts.GracePeriodSeconds)
	}
	if opts.Preconditions != nil && opts.Preconditions.UID != nil {
		cur, err := s.b.GetPod(ns, name)
		if err != nil {
			return err
		}
		if cur.UID != *opts.Preconditions.UID {
			return apierrors.NewConflict(podsResource, name, fmt.Errorf(
				"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated",
				*opts.Preconditions.UID, cur.UID))
		}
	}
	p, err := s.b.DeletePod(ns, name, opts.GracePeriodSeconds)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, podObject(p))
}

// checkContentType accepts a request whose Content-Type is one of types;
// an absent Content-Type is taken as the first.
func checkContentType(r *http.Request, types ...string) error {
	raw := r.Header.Get("Content-Type")
	if raw == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(raw)
	if err != nil {
		return unsupportedMediaType(fmt.Sprint(types))
	}
	for _, t := range types {
		if mt == t {
			return nil
		}
	}
	return unsupportedMediaType(fmt.Sprint(types))
}

// readPod decodes the one pod of the request body (YAML or JSON, strictly)
// and reconciles its namespace and name with the request path: an absent
// namespace is the path's, a different one is refused, and so is a name
// that is not the path's (when urlName is set).
func readPod(w http.ResponseWriter, r *http.Request, ns, urlName string) (*model.Pod, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, err
	}
	docs, err := model.DecodeDocuments(body)
	if err != nil {
		return nil, forPod(urlName, err)
	}
	if len(docs) != 1 {
		return nil, badRequest("the request body must hold exactly one Pod, it holds %d", len(docs))
	}
	pod := docs[0].Pod
	switch written := docs[0].Namespace; written {
	case "":
		pod.Namespace = ns
	case ns:
	default:
		return nil, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", written, ns)
	}
	if urlName != "" && pod.Name != urlName {
		return nil, badRequest("the name of the object (%s) does not match the name on the URL (%s)", pod.Name, urlName)
	}
	return pod, nil
}

// stream writes watch events, one JSON object per line, flushed each.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startStream(w http.ResponseWriter) (*stream, error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return &stream{w: w, rc: rc}, rc.Flush()
}

func (st *stream) send(typ string, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode watch event: %w", err)
	}
	b, err := json.Marshal(metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		return fmt.Errorf("encode watch event: %w", err)
	}
	if _, err := st.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return st.rc.Flush()
}
