package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

var (
	podsResource = schema.GroupResource{Resource: "pods"}
	podKind      = schema.GroupKind{Kind: "Pod"}
)

// Errors of the HTTP layer itself.
var (
	errNotFoundPath = &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
	errMethodNotAllowed = &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
	}}
)

// podError names the pod a failure is about (for the Status and the log)
// when the request path does not.
type podError struct {
	name string
	uid  types.UID // when known
	err  error
}

func (e *podError) Error() string { return e.err.Error() }
func (e *podError) Unwrap() error { return e.err }

func forPod(name string, err error) error {
	if err == nil {
		return nil
	}
	return &podError{name: name, err: err}
}

// forPodUID is forPod for a pod whose UID is known.
func forPodUID(name string, uid types.UID, err error) error {
	if err == nil {
		return nil
	}
	return &podError{name: name, uid: uid, err: err}
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func unsupportedMediaType(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", contentType),
	}}
}

// statusFor converts an error to the Kubernetes Status the client gets.
func statusFor(err error, name string) *apierrors.StatusError {
	var (
		se      *apierrors.StatusError
		invalid *agent.InvalidError
		bad     *agent.BadRequestError
		tooBig  *http.MaxBytesError
	)
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &invalid):
		return invalidStatus(name, invalid)
	case errors.As(err, &tooBig):
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusRequestEntityTooLarge, Reason: metav1.StatusReasonRequestEntityTooLarge,
			Message: fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit),
		}}
	case errors.Is(err, agent.ErrNotFound):
		return apierrors.NewNotFound(podsResource, name)
	case errors.Is(err, agent.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(podsResource, name)
	case errors.As(err, &bad):
		return apierrors.NewBadRequest(bad.Message)
	case errors.Is(err, model.ErrInvalidManifest):
		return apierrors.NewBadRequest(err.Error())
	default:
		return apierrors.NewInternalError(err)
	}
}

// invalidStatus is a 422 with one cause per problem: a field error each
// for validation, one cause per joined error of the runtime's check.
func invalidStatus(name string, e *agent.InvalidError) *apierrors.StatusError {
	if len(e.Errs) > 0 {
		return apierrors.NewInvalid(podKind, name, e.Errs)
	}
	var causes []metav1.StatusCause
	var msgs []string
	for _, err := range flatten(e.Err) {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueNotSupported, Message: err.Error()})
		msgs = append(msgs, err.Error())
	}
	msg := fmt.Sprintf("Pod %q is invalid: %s", name, msgs[0])
	if len(msgs) > 1 {
		msg = fmt.Sprintf("Pod %q is invalid: [%s]", name, strings.Join(msgs, ", "))
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: msg,
		Details: &metav1.StatusDetails{Kind: podKind.Kind, Name: name, Causes: causes},
	}}
}

// flatten lists the errors joined in err (errors.Join), or err itself.
func flatten(err error) []error {
	if err == nil {
		return []error{errors.New("rejected by the runtime")}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// fail is the one place where an error becomes a response: it converts err
// to a Status, writes it unless the response has already started (a
// stream), and logs it once.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	name := r.PathValue("name")
	var uid types.UID
	var pe *podError
	if errors.As(err, &pe) {
		name, uid = pe.name, pe.uid
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path}
	if name != "" {
		attrs = append(attrs, "pod", r.PathValue("ns")+"/"+name)
	}
	if uid != "" {
		attrs = append(attrs, "podUID", uid)
	}
	if rw, ok := w.(*responseWriter); ok && rw.started {
		// Mid-stream: the client has the status line already. A client
		// that went away is no failure of ours.
		level := slog.LevelWarn
		if r.Context().Err() != nil || errors.Is(err, context.Canceled) {
			level = slog.LevelDebug
		}
		s.log.Log(r.Context(), level, "stream ended with an error", append(attrs, "err", err)...)
		return
	}
	st := statusFor(err, name).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Status = metav1.StatusFailure
	attrs = append(attrs, "code", st.Code, "reason", st.Reason)
	if st.Code >= http.StatusInternalServerError {
		s.log.Error("request failed", append(attrs, "err", err)...)
	} else {
		s.log.Info("request refused", append(attrs, "message", st.Message)...)
	}
	_ = writeJSON(w, int(st.Code), &st)
}
