package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/podward/podward/internal/client"
)

// follow hands each event of w to each, for get -w and events -w, which
// print until the user interrupts them. It returns nil once ctx ended (the
// interrupt) or the agent ended the stream, each's error as is, and any
// other error of the watch reported (see report). w must have been opened
// with ctx.
func follow[T any](ctx context.Context, s Streams, w *client.Watch[T], each func(client.Event[T]) error) error {
	for {
		ev, err := w.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return report(s, err)
		}
		if err := each(ev); err != nil {
			return err
		}
	}
}

// watchUntil hands each event of w to done, for wait and delete --wait,
// which read until a condition holds. It returns once done reports true or
// an error, with that error; ctx's error once ctx ended, which is how a
// timeout shows; and any other error of the watch wrapped. Only ctx's end
// or a closed watch makes it give up waiting.
func watchUntil[T any](ctx context.Context, w *client.Watch[T], done func(client.Event[T]) (bool, error)) error {
	for {
		ev, err := w.Next()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return fmt.Errorf("watch: %w", err)
		}
		if ok, err := done(ev); err != nil || ok {
			return err
		}
	}
}
