package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Watch event types, as in Kubernetes.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Error    = "ERROR"
)

// Event is one change of a watched object.
type Event[T any] struct {
	Type   string // Added, Modified or Deleted
	Object *T
}

// Watch reads a stream of watch events. It is not safe for concurrent use;
// Close may be called from any goroutine to end a Next that waits.
type Watch[T any] struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	dec    *json.Decoder
}

func newWatch[T any](body io.ReadCloser, cancel context.CancelFunc) *Watch[T] {
	return &Watch[T]{body: body, cancel: cancel, dec: json.NewDecoder(body)}
}

// Next waits for the next event. It returns io.EOF once the agent ended
// the stream (it stopped), the ctx error of the watch once that ended, and
// an *apierrors.StatusError for an ERROR event.
func (w *Watch[T]) Next() (Event[T], error) {
	var raw metav1.WatchEvent
	if err := w.dec.Decode(&raw); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return Event[T]{}, err
	}
	if raw.Type == Error {
		var st metav1.Status
		if err := json.Unmarshal(raw.Object.Raw, &st); err != nil {
			return Event[T]{}, fmt.Errorf("decode watch error: %w", err)
		}
		return Event[T]{}, &apierrors.StatusError{ErrStatus: st}
	}
	obj := new(T)
	if err := json.Unmarshal(raw.Object.Raw, obj); err != nil {
		return Event[T]{}, fmt.Errorf("decode watch event: %w", err)
	}
	return Event[T]{Type: raw.Type, Object: obj}, nil
}

// Close ends the watch.
func (w *Watch[T]) Close() error {
	w.cancel()
	return w.body.Close()
}
