package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/shutdown"
	"github.com/podward/podward/internal/wire"
)

// NodeShutdown is the node shutdown manager as the API serves it: `podward
// shutdown` asks for the same shutdown logind would (*shutdown.Manager).
type NodeShutdown interface {
	Begin(ctx context.Context, grace time.Duration, reason shutdown.Reason) error
	Cancel(ctx context.Context) error
	Done() <-chan struct{}
	Status() shutdown.Status
}

// WithShutdown serves sh on wire.ShutdownPath (podward's own endpoint:
// Kubernetes has none); without it the path answers 404.
// It is called before Serve.
func (s *Server) WithShutdown(sh NodeShutdown) *Server {
	s.shutdown = sh
	return s
}

var errNoShutdown = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
	Message: "this agent has no node shutdown",
}}

// getShutdown serves GET wire.ShutdownPath: the last shutdown's status; with
// wait=true, once it is over (every group done, or cancelled), or at once
// when none began.
func (s *Server) getShutdown(w http.ResponseWriter, r *http.Request) error {
	if s.shutdown == nil {
		return errNoShutdown
	}
	wait, err := boolParam(r.URL.Query(), "wait")
	if err != nil {
		return err
	}
	done := s.shutdown.Done()
	if !wait || done == nil {
		return writeJSON(w, http.StatusOK, s.shutdown.Status())
	}
	// The answer starts now, as a stream's, so that no client gives up
	// waiting for its headers; the status follows once the shutdown is over.
	if _, err := startStream(w); err != nil {
		return err
	}
	select {
	case <-done:
	case <-r.Context().Done():
		return r.Context().Err()
	}
	b, err := json.Marshal(s.shutdown.Status())
	if err != nil {
		return fmt.Errorf("encode the node shutdown: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// beginShutdown serves POST wire.ShutdownPath: 202 with the shutdown begun (or
// the one in progress: a second POST changes nothing).
func (s *Server) beginShutdown(w http.ResponseWriter, r *http.Request) error {
	if s.shutdown == nil {
		return errNoShutdown
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return err
	}
	var req wire.ShutdownRequest
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return badRequest("decode the node shutdown request: %v", err)
		}
	}
	var grace time.Duration
	if g := req.GracePeriodSeconds; g != nil {
		if *g < 0 {
			return badRequest("gracePeriodSeconds %d must be >= 0", *g)
		}
		grace = time.Duration(*g) * time.Second
	}
	switch err := s.shutdown.Begin(r.Context(), grace, shutdown.ReasonAPI); {
	case errors.Is(err, shutdown.ErrNotConfigured):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, shutdown.ErrStopped):
		return apierrors.NewServiceUnavailable(err.Error())
	case err != nil:
		return fmt.Errorf("begin the node shutdown: %w", err)
	}
	return writeJSON(w, http.StatusAccepted, s.shutdown.Status())
}

// cancelShutdown serves DELETE wire.ShutdownPath: the shutdown in progress is
// called off; 200 with its status (also when there was none).
func (s *Server) cancelShutdown(w http.ResponseWriter, r *http.Request) error {
	if s.shutdown == nil {
		return errNoShutdown
	}
	switch err := s.shutdown.Cancel(r.Context()); {
	case errors.Is(err, shutdown.ErrStopped):
		return apierrors.NewServiceUnavailable(err.Error())
	case err != nil:
		return fmt.Errorf("cancel the node shutdown: %w", err)
	}
	return writeJSON(w, http.StatusOK, s.shutdown.Status())
}
