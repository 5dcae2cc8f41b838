package process

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// register registers in, which exited.
func (r *Runtime) register(in *instance) {
	r.mu.Lock()
	r.addLocked(in)
	r.mu.Unlock()
}

// addLocked records in by ID and by pod; r.mu is held.
func (r *Runtime) addLocked(in *instance) {
	r.instances[in.id] = in
	pod := r.byPod[in.podUID]
	if pod == nil {
		pod = make(map[string]*instance)
		r.byPod[in.podUID] = pod
	}
	pod[in.id] = in
}

// track registers in, whose shim is shimProc, and watches it until it
// exits; its Output starts at byte offset of its log. After Close the
// instance is only registered: the next Runtime on the root will watch it.
// track owns shimProc.
func (r *Runtime) track(in *instance, shimProc *shim.Proc, offset int64) {
	r.mu.Lock()
	r.addLocked(in)
	watching := !r.closed
	if watching {
		r.watchers.Add(1)
	}
	r.mu.Unlock()
	if !watching {
		shimProc.Close()
		return
	}
	r.watch(in, shimProc, offset)
}

// watch is the watching of one instance's shim, until it exits or the
// Runtime closes: no goroutine of its own waits for it, the Runtime's
// poller does (see poller), on a pidfd of the watch's own. Whichever of the
// exit and Close claims it first ends it.
type watch struct {
	r        *Runtime
	in       *instance
	follower *crilog.Follower // nil without Output
	notices  *noticeReader    // nil without a notices FIFO
	// pidfd is the shim's, in the poller (key); -1 when the watch waits
	// on shimProc instead (no pidfd could be opened, or the shim had
	// exited already).
	pidfd int
	// key is set once the poller has pidfd: its handler may run before.
	key      atomic.Int32
	shimProc *shim.Proc // nil once pidfd is the watch's own
	claimed  atomic.Bool
}

// watch starts watching in's shim: its log followed for Output, its
// notices read, its exit waited for in the poller. r.watchers was added
// to; the watch's end calls Done. It owns shimProc.
func (r *Runtime) watch(in *instance, shimProc *shim.Proc, offset int64) {
	w := &watch{r: r, in: in, shimProc: shimProc, pidfd: -1}
	if r.output != nil {
		w.follower = r.follow(in, offset, in.logger(r.log))
	}
	w.notices = r.readNotices(in)
	r.mu.Lock()
	r.watches[w] = struct{}{}
	r.mu.Unlock()
	// A pidfd of the watch's own, for the poller: the Proc's is in Go's
	// poller, which gives no descriptor out. The PID was the shim's when
	// it was opened if the shim has not exited after that (a shim the
	// Runtime did not start may be reaped by someone else, and its PID
	// reused, once it exited).
	fd, err := unix.PidfdOpen(shimProc.Ident().Pid, unix.PIDFD_NONBLOCK)
	if err != nil || shimProc.Exited() {
		if err == nil {
			unix.Close(fd)
		}
		// Gone already, or no pidfd: the Proc's own says when.
		go w.exited()
		return
	}
	w.pidfd, w.shimProc = fd, nil
	key, err := r.poller.add(fd, true, func() { go w.exited() })
	switch {
	case err == nil:
		w.key.Store(key)
		shimProc.Close()
	case errors.Is(err, errPollerClosed):
		w.shimProc = shimProc
		unix.Close(fd)
		w.pidfd = -1
		w.abandon()
	default:
		in.logger(r.log).Warn("wait for the shim in a goroutine of its own", "err", err)
		w.shimProc = shimProc
		unix.Close(fd)
		w.pidfd = -1
		go w.exited()
	}
}

// claim says whether the caller is the one to end the watch.
func (w *watch) claim() bool {
	if !w.claimed.CompareAndSwap(false, true) {
		return false
	}
	w.r.mu.Lock()
	delete(w.r.watches, w)
	w.r.mu.Unlock()
	return true
}

// release closes the watch's handle on the shim, after reaping the shim if
// reap is set (a shim this process started is its child).
func (w *watch) release(reap bool) {
	if w.shimProc != nil {
		if reap {
			w.shimProc.Reap()
		}
		w.shimProc.Close()
		return
	}
	// A once handler that ran was removed: a key not stored yet is 0,
	// which no registration has.
	w.r.poller.remove(w.key.Load())
	if reap {
		var info unix.Siginfo
		for errors.Is(unix.Waitid(unix.P_PIDFD, w.pidfd, &info, unix.WEXITED|unix.WNOHANG, nil), unix.EINTR) {
		}
	}
	unix.Close(w.pidfd)
}

// abandon ends the watch at Close: the instance is the next Runtime's.
func (w *watch) abandon() {
	if !w.claim() {
		return
	}
	defer w.r.watchers.Done()
	w.release(false)
	w.notices.finish()
	w.follower.Stop()
}

// exited reads how the instance ended, once its shim is gone, and reports
// it, once its log was read to the end for Output.
func (w *watch) exited() {
	if !w.claim() {
		return
	}
	r, in := w.r, w.in
	defer r.watchers.Done()
	if w.shimProc != nil {
		if err := w.shimProc.Wait(r.ctx); err != nil {
			if r.ctx.Err() == nil {
				in.logger(r.log).Error("wait for the shim", "err", err)
			}
			// Closed: the instance is the next Runtime's.
			w.release(false)
			w.notices.finish()
			w.follower.Stop()
			return
		}
	}
	w.release(true)
	log := in.logger(r.log)
	status := r.settle(in.dir, w.notices.finish(), log)
	in.setExit(status)
	w.follower.Finish()
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

// abandonWatches ends the watches still waiting, at Close, once the poller
// stopped.
func (r *Runtime) abandonWatches() {
	r.mu.Lock()
	left := make([]*watch, 0, len(r.watches))
	for w := range r.watches {
		left = append(left, w)
	}
	r.mu.Unlock()
	for _, w := range left {
		w.abandon()
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
