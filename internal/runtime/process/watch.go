package process

import (
	"context"
	"errors"
	"log/slog"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// register registers in, which exited.
func (r *Runtime) register(in *instance) {
	r.mu.Lock()
	r.instances[in.id] = in
	r.mu.Unlock()
}

// track registers in, whose shim is shimProc, and watches it until it
// exits; its Output starts at byte offset of its log. After Close the
// instance is only registered: the next Runtime on the root will watch it.
// track owns shimProc.
func (r *Runtime) track(in *instance, shimProc *shim.Proc, offset int64) {
	r.mu.Lock()
	r.instances[in.id] = in
	watching := !r.closed
	if watching {
		r.watchers.Add(1)
	}
	r.mu.Unlock()
	if !watching {
		shimProc.Close()
		return
	}
	go r.watch(in, shimProc, offset)
}

// watch waits for the shim of in to exit, reads how the instance ended and
// reports it, once its log was read to the end for Output.
func (r *Runtime) watch(in *instance, shimProc *shim.Proc, offset int64) {
	defer r.watchers.Done()
	defer shimProc.Close()
	log := r.log.With("pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id)

	var f *follower
	if r.output != nil {
		f = r.follow(in, offset, log)
	}
	if err := shimProc.Wait(r.ctx); err != nil {
		if r.ctx.Err() == nil {
			log.Error("wait for the shim", "err", err)
		}
		// Closed: the instance is the next Runtime's.
		f.stop()
		return
	}
	// A shim this process started is its child.
	shimProc.Reap()
	status := r.settle(in.dir, log)
	in.setExit(status)
	f.finish()
	log.Debug("container exited", "exitCode", status.ExitCode, "reason", status.Reason)

	ev := runtime.Event{PodUID: in.podUID, Container: in.container, ID: in.id, Exit: status}
	select {
	case r.events <- ev:
	case <-r.done:
		log.Debug("runtime closed; exit event dropped")
	}
}

// settle returns how the instance in dir ended, once its shim is gone: as
// the shim recorded it, or, when the shim died without doing so, as
// recordLost decides.
func (r *Runtime) settle(dir string, log *slog.Logger) runtime.ExitStatus {
	st, err := shim.Load(dir)
	if err == nil && st.Exit != nil {
		return st.Exit.Status()
	}
	if err != nil {
		log.Error("read the instance's state", "err", err)
	}
	return r.recordLost(dir, st, log)
}

// recordLost decides and records the end of an instance whose shim died
// without recording one: a start error when the container never started,
// else an unknown status, after killing what is left of the container,
// which nothing supervises any more.
func (r *Runtime) recordLost(dir string, st shim.State, log *slog.Logger) runtime.ExitStatus {
	e := &shim.Exit{FinishedAt: r.clock.Now()}
	if st.Container == nil {
		e.ExitCode, e.Reason = 128, ReasonStartError
		e.Message = "the shim exited before the container started"
	} else {
		e.ExitCode, e.Reason = 137, ReasonStatusUnknown
		e.Message = "the shim died while the container ran; its exit status is lost"
		killOrphan(st.Container.Process, log)
	}
	log.Warn("the instance's shim died", "reason", e.Reason)
	if err := shim.WriteExit(dir, e); err != nil {
		log.Error("record the instance's exit", "err", err)
	}
	return e.Status()
}

// killOrphan kills the process group of a container's main process that
// outlived its shim, if that process is still the one id names. Its group
// ID cannot be reused while it is not reaped; its new parent may reap it
// the moment it dies, so the group is signalled first.
func killOrphan(id shim.Ident, log *slog.Logger) {
	p, err := shim.OpenProc(id)
	if errors.Is(err, shim.ErrGone) {
		return
	}
	if err != nil {
		log.Error("find what is left of the container", "err", err)
		return
	}
	defer p.Close()
	if err := unix.Kill(-id.Pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		log.Error("kill what is left of the container", "err", err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		log.Error("kill what is left of the container", "err", err)
	}
}

// follower hands an instance's log lines to Output.
type follower struct {
	cancel context.CancelFunc
	until  chan struct{}
	done   chan struct{}
}

// follow starts following in's log from offset for Output.
func (r *Runtime) follow(in *instance, offset int64, log *slog.Logger) *follower {
	// Not under r.ctx: Close stops a follower through its watcher, which
	// lets the follower of an exited instance read to the end.
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, until: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		opts := crilog.ReadOptions{Follow: true, Tail: crilog.AllLines, Offset: offset, Split: true, Until: f.until}
		err := crilog.ReadLog(ctx, in.logPath, opts, func(l crilog.Line) error {
			r.output(in.pod, in.container, l.Stream, l.Content)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("follow the container log", "err", err)
		}
	}()
	return f
}

// finish waits for the follower to read the log of an instance that
// exited to its end. A nil follower does nothing.
func (f *follower) finish() {
	if f == nil {
		return
	}
	close(f.until)
	<-f.done
	f.cancel()
}

// stop stops the follower and waits for it. A nil follower does nothing.
func (f *follower) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
