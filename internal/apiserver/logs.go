package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
)

// getLog serves GET .../pods/{name}/log, as the kubelet does: the lines of
// one container instance as text/plain, each optionally prefixed by its
// RFC 3339 timestamp. Parameters: container, previous, follow, timestamps,
// tailLines, limitBytes.
//
// With limitBytes, the response ends once that many bytes were sent, in
// the middle of a line if need be, as the API server and the kubelet end
// it; a limitBytes below 1 is Invalid (422), as the API server's
// validation of PodLogOptions says.
//
// With follow, the response goes on while the instance runs and ends once
// it has ended and everything it wrote has been sent (or the pod is gone,
// or the client leaves, or the server stops).
//
// A line the runtime split into partial records is sent as one line (one
// timestamp), but piece by piece as it is read: the agent never holds a
// line whole, whatever its length.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	q := r.URL.Query()
	var opts struct{ follow, previous, timestamps bool }
	for p, dst := range map[string]*bool{"follow": &opts.follow, "previous": &opts.previous, "timestamps": &opts.timestamps} {
		b, err := boolParam(q, p)
		if err != nil {
			return err
		}
		*dst = b
	}
	tail := crilog.AllLines
	if n, ok, err := intParam(q, "tailLines"); err != nil {
		return err
	} else if ok && n >= 0 {
		tail = int(n)
	}
	limit, err := limitBytesParam(q, name)
	if err != nil {
		return err
	}
	container := q.Get("container")

	pod, err := s.b.GetPod(ns, name)
	if err != nil {
		return err
	}
	path, err := s.b.LogPath(ns, name, container, opts.previous)
	if err != nil {
		return forPodUID(name, pod.UID, err)
	}
	if container == "" {
		// LogPath accepted no name: the pod has one regular container.
		container = pod.Spec.Containers[0].Name
	}
	cs, _ := containerStatus(pod, container)
	if !opts.previous && cs.ContainerID == "" {
		reason := "ContainerCreating"
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			reason = cs.State.Waiting.Reason
		}
		return forPodUID(name, pod.UID, badRequest("container %q in pod %q is waiting to start: %s", container, name, reason))
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return forPodUID(name, pod.UID, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
				Message: fmt.Sprintf("no log for container %q in pod %q", container, name),
				Details: &metav1.StatusDetails{Name: name, Kind: "pods"},
			}})
		}
		return forPodUID(name, pod.UID, fmt.Errorf("log of container %q: %w", container, err))
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	lw := &logWriter{w: w, rc: http.NewResponseController(w), timestamps: opts.timestamps, flush: opts.follow, limit: limit}
	ctx := r.Context()
	if !opts.follow || opts.previous || cs.State.Running == nil {
		return forPodUID(name, pod.UID, limitReached(crilog.ReadLog(ctx, path, crilog.ReadOptions{Tail: tail}, lw.line)))
	}
	ended, stop := s.watchInstance(ctx, pod, container, cs.ContainerID)
	defer stop()
	return forPodUID(name, pod.UID, limitReached(crilog.ReadLog(ctx, path, crilog.ReadOptions{Follow: true, Tail: tail, Until: ended}, lw.line)))
}

// limitBytesParam is the query's limitBytes, 0 for none; below 1 it is
// Invalid, as the API server's validation of PodLogOptions has it.
func limitBytesParam(q url.Values, name string) (int64, error) {
	n, ok, err := intParam(q, "limitBytes")
	if err != nil || !ok {
		return 0, err
	}
	if n < 1 {
		return 0, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name,
			field.ErrorList{field.Invalid(field.NewPath("limitBytes"), n, "must be greater than 0")})
	}
	return n, nil
}

// errLimitReached ends the reading once limitBytes were sent.
var errLimitReached = errors.New("limitBytes reached")

// limitReached is err, nil when it is only that the limit was reached: the
// response is complete.
func limitReached(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// logWriter writes log lines, and pieces of lines, to the response.
type logWriter struct {
	w          http.ResponseWriter
	rc         *http.ResponseController
	timestamps bool
	flush      bool
	// limit is how many bytes may be sent, 0 for no limit; sent counts
	// them.
	limit, sent int64
	buf         []byte
}

func (lw *logWriter) line(l crilog.Line) error {
	lw.buf = lw.buf[:0]
	if lw.timestamps && !l.Continued {
		lw.buf = l.Time.UTC().AppendFormat(lw.buf, time.RFC3339Nano)
		lw.buf = append(lw.buf, ' ')
	}
	lw.buf = append(lw.buf, l.Content...)
	if !l.Partial {
		lw.buf = append(lw.buf, '\n')
	}
	limited := lw.limit > 0 && lw.sent+int64(len(lw.buf)) >= lw.limit
	if limited {
		lw.buf = lw.buf[:lw.limit-lw.sent]
	}
	n, err := lw.w.Write(lw.buf)
	lw.sent += int64(n)
	if err != nil {
		return err
	}
	if lw.flush || limited {
		if err := lw.rc.Flush(); err != nil {
			return err
		}
	}
	if limited {
		return errLimitReached
	}
	return nil
}

// watchInstance returns a channel closed once the container instance id of
// pod no longer runs (or the pod is gone). stop ends the watch and waits
// for it; ended is never closed when ctx ends first.
func (s *Server) watchInstance(ctx context.Context, pod *v1.Pod, container, id string) (ended <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	first, ch := s.syncedWatch(ctx, pod.Namespace)
	// What happened before the watch looked is not in it: look now.
	cur, err := s.b.GetPod(pod.Namespace, pod.Name)
	over := err != nil || cur.UID != pod.UID || !instanceRunning(cur, container, id)
	go func() {
		defer close(finished)
		if over {
			close(done)
			cancel()
		}
		for ev := range withFirst(first, ch) {
			if over || ev.Pod.UID != pod.UID {
				continue
			}
			if ev.Type == "DELETED" || !instanceRunning(ev.Pod, container, id) {
				over = true
				close(done)
				cancel() // the channel closes once the watch notices
			}
		}
	}()
	return done, func() {
		cancel()
		<-finished
	}
}

// containerStatus finds the status of a container of any kind, the defer
// containers' annotation included.
func containerStatus(p *v1.Pod, name string) (v1.ContainerStatus, bool) {
	lists := [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses}
	if mp, err := model.FromV1(p); err == nil {
		lists = append(lists, mp.DeferStatuses())
	}
	for _, list := range lists {
		for _, cs := range list {
			if cs.Name == name {
				return cs, true
			}
		}
	}
	return v1.ContainerStatus{}, false
}

// instanceRunning reports whether the container instance id still runs.
func instanceRunning(p *v1.Pod, container, id string) bool {
	cs, ok := containerStatus(p, container)
	return ok && cs.ContainerID == id && cs.State.Running != nil
}
