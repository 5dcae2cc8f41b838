package crilog

import (
	"context"
	"log/slog"
	"sync"
)

// Follower hands every line appended to a container instance's log to a
// function, a line longer than a record in its pieces (see Line), from its
// own goroutine, until the instance exits (Finish) or
// its reader goes away (Stop). It is how a runtime feeds `podward run` the
// output of the containers it runs.
type Follower struct {
	cancel    context.CancelFunc
	until     chan struct{}
	untilOnce sync.Once
	done      chan struct{}
}

// Follow starts following the log at path from offset. It does not run
// under the caller's context: only Finish and Stop end it, so that the log
// of an exited instance is always read to its end. Errors other than its
// end go to log.
func Follow(path string, offset int64, log *slog.Logger, emit func(stream string, content []byte)) *Follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Follower{cancel: cancel, until: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		opts := ReadOptions{Follow: true, Tail: AllLines, Offset: offset, Until: f.until}
		err := ReadLog(ctx, path, opts, func(l Line) error {
			if l.Continued && len(l.Content) == 0 {
				return nil // the end of a line said nothing more
			}
			emit(l.Stream, l.Content)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("follow the container log", "path", path, "err", err)
		}
	}()
	return f
}

// Finish waits for the follower to read the log of an instance that exited
// to its end. A nil Follower does nothing.
func (f *Follower) Finish() {
	if f == nil {
		return
	}
	f.untilOnce.Do(func() { close(f.until) })
	<-f.done
	f.cancel()
}

// Stop stops the follower and waits for it. A nil Follower does nothing.
func (f *Follower) Stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
