package process

import (
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

	var f *crilog.Follower
	if r.output != nil {
		f = r.follow(in, offset, log)
	}
	notices := r.readNotices(in, log)
	if err := shimProc.Wait(r.ctx); err != nil {
		if r.ctx.Err() == nil {
			log.Error("wait for the shim", "err", err)
		}
		// Closed: the instance is the next Runtime's.
		notices.finish()
		f.Stop()
		return
	}
	// A shim this process started is its child.
	shimProc.Reap()
	status := r.settle(in.dir, notices.finish(), log)
	in.setExit(status)
	f.Finish()
	log.Debug("container exited", "exitCode", status.ExitCode, "reason", status.Reason)

	ev := runtime.Event{PodUID: in.podUID, Container: in.container, ID: in.id, Exit: status}
	select {
	case r.events <- ev:
	case <-r.done:
		log.Debug("runtime closed; exit event dropped")
	}
	// After the event: an exit is not reported later for the cgroup's
	// removal (a few hundred µs per hierarchy on v1).
	if cg := in.cgroup; cg != nil {
		if err := errors.Join(cg.Kill(), cg.Remove()); err != nil {
			log.Warn("remove the instance's cgroup", "err", err)
		}
	}
}

// settle returns how the instance in dir ended, once its shim is gone: as
// the shim recorded it; as it told in a notice (noticed) when it could not
// record it (a full disk), which is recorded now if it can be; or, when the
// shim died without doing either, as recordLost decides.
func (r *Runtime) settle(dir string, noticed *shim.Exit, log *slog.Logger) runtime.ExitStatus {
	st, err := shim.Load(dir)
	if err == nil && st.Exit != nil {
		return st.Exit.Status()
	}
	if noticed != nil {
		log.Warn("the shim could not record the instance's exit; recording the one it sent")
		if err := shim.WriteExit(dir, noticed); err != nil {
			log.Error("record the instance's exit", "err", err)
		}
		return noticed.Status()
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
		e.ExitCode, e.Reason = 128, runtime.ReasonStartError
		e.Message = "the shim exited before the container started"
	} else {
		e.ExitCode, e.Reason = 137, runtime.ReasonStatusUnknown
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

// follow starts following in's log from offset for Output.
func (r *Runtime) follow(in *instance, offset int64, log *slog.Logger) *crilog.Follower {
	// Close stops a follower through its watcher, which lets the follower
	// of an exited instance read to the end.
	return crilog.Follow(in.logPath, offset, log, func(stream string, line []byte) {
		r.output(in.pod, in.container, stream, line)
	})
}
