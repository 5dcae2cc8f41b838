package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// drainTimeout bounds how long a watcher waits for a container's pipes to
// close once its process group was killed: a grandchild that left the group
// (setsid) may hold them open for ever.
const drainTimeout = 2 * time.Second

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// launchSpec is a process to start in a container's context.
type launchSpec struct {
	argv   []string
	env    []string
	dir    string
	mounts []bindMount // when any, the process runs in a private mount namespace
}

// prepare builds the launch spec of c for pod; argv, when not nil, replaces
// the container's command (for Exec).
func (r *Runtime) prepare(pod *model.Pod, ref model.ContainerRef, c *v1.Container, argv []string) (launchSpec, error) {
	if err := checkUID(pod.UID); err != nil {
		return launchSpec{}, err
	}
	if err := r.checkContainer(pod, ref, c); err != nil {
		return launchSpec{}, err
	}
	env, vars, err := containerEnv(pod, c, fieldPath(ref))
	if err != nil {
		return launchSpec{}, err
	}
	if argv == nil {
		lookup := func(name string) (string, bool) {
			v, ok := vars[name]
			return v, ok
		}
		for _, s := range c.Command {
			argv = append(argv, expand(s, lookup))
		}
		for _, s := range c.Args {
			argv = append(argv, expand(s, lookup))
		}
	}
	dir := c.WorkingDir
	if dir == "" {
		dir = "/"
	}
	mounts, err := r.containerMounts(pod, c, vars)
	if err != nil {
		return launchSpec{}, err
	}
	return launchSpec{argv: argv, env: env, dir: dir, mounts: mounts}, nil
}

// launch starts spec in a process group of its own with the given stdout and
// stderr, and returns once the process runs its command (or failed to). A
// process with mounts goes through the init helper; ctx ending while the
// helper works kills it. The caller owns the returned Cmd and must Wait for
// it.
func (r *Runtime) launch(ctx context.Context, spec launchSpec, stdout, stderr *os.File) (*exec.Cmd, error) {
	if len(spec.mounts) == 0 {
		path, err := lookPath(spec.argv[0], lookupEnv(spec.env, "PATH"), spec.dir)
		if err != nil {
			return nil, err
		}
		cmd := &exec.Cmd{
			Path:        path,
			Args:        spec.argv,
			Env:         spec.env,
			Dir:         spec.dir,
			Stdout:      stdout,
			Stderr:      stderr,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd, nil
	}

	raw, err := json.Marshal(initSpec{Mounts: spec.mounts, Dir: spec.dir, Argv: spec.argv})
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusR.Close()
	cmd := &exec.Cmd{
		// This very binary, even if it was replaced on disk since.
		Path:       "/proc/self/exe",
		Args:       []string{"podward-init"},
		Env:        append(spec.env[:len(spec.env):len(spec.env)], initEnv+"="+string(raw)),
		Dir:        "/", // the helper changes to spec.dir after mounting
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{statusW}, // initStatusFD
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:      true,
			Unshareflags: syscall.CLONE_NEWNS,
		},
	}
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return nil, fmt.Errorf("start init helper: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = statusR.SetReadDeadline(longAgo) })
	msg, err := io.ReadAll(statusR)
	stop()
	if err == nil && len(msg) == 0 {
		return cmd, nil
	}
	// The helper failed, or we gave up on it: it must not go on.
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	_ = cmd.Wait()
	switch {
	case len(msg) > 0:
		return nil, errors.New(string(msg))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		return nil, fmt.Errorf("wait for the init helper: %w", err)
	}
}

// StartContainer starts an instance of the container ref of pod: its log is
// LogPath(pod.UID, ref.Name, attempt) (appended to if it exists). It returns
// once the process runs its command; from then on the instance lives on its
// own, whatever happens to ctx, and its exit is reported on Events. If ctx
// is done before the start, nothing starts and ctx.Err() is returned.
// PreparePod must have been called for the pod. The runtime keeps pod, which
// the caller must not change any more.
func (r *Runtime) StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	if r.closed() {
		return runtime.Container{}, errClosed
	}
	c := pod.Container(ref)
	cont, err := r.start(ctx, pod, ref, c, attempt)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("start container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return cont, nil
}

func (r *Runtime) start(ctx context.Context, pod *model.Pod, ref model.ContainerRef, c *v1.Container, attempt int) (cont runtime.Container, err error) {
	spec, err := r.prepare(pod, ref, c, nil)
	if err != nil {
		return cont, err
	}
	id, err := newID()
	if err != nil {
		return cont, err
	}
	logPath := r.LogPath(pod.UID, c.Name, attempt)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return cont, err
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return cont, err
	}
	var files []*os.File // closed on failure
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	files = append(files, logFile)
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return cont, err
	}
	files = append(files, stdoutR, stdoutW)
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		return cont, err
	}
	files = append(files, stderrR, stderrW)
	if err := ctx.Err(); err != nil {
		return cont, err
	}

	cmd, err := r.launch(ctx, spec, stdoutW, stderrW)
	// The child has its copies; ours would keep the pipes open for ever.
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return cont, err
	}
	cont = runtime.Container{ID: id, StartedAt: r.clock.Now(), LogPath: logPath}
	in := &instance{id: id, podUID: pod.UID, container: c.Name, pgid: cmd.Process.Pid}
	r.mu.Lock()
	r.instances[id] = in
	r.mu.Unlock()

	log := r.log.With("pod", pod.Key(), "podUID", pod.UID, "container", c.Name, "id", id)
	log.Debug("container started", "pid", cmd.Process.Pid, "attempt", attempt)

	var observe func(crilog.Record)
	if r.output != nil {
		name := c.Name
		observe = func(rec crilog.Record) { r.output(pod, name, rec.Stream, rec.Content) }
	}
	sink := crilog.NewSink(logFile, r.clock, observe)
	copied := make(chan struct{}, 2)
	go copyStream(stdoutR, crilog.NewWriter(sink, crilog.Stdout), log, copied)
	go copyStream(stderrR, crilog.NewWriter(sink, crilog.Stderr), log, copied)
	go r.watch(in, cmd, log, logFile, []*os.File{stdoutR, stderrR}, copied)
	return cont, nil
}

// copyStream copies a container's stream into its log until the pipe
// closes. A failing log does not stop the copy: the container must never
// block on a full pipe.
func copyStream(src *os.File, w *crilog.Writer, log *slog.Logger, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32*1024)
	var werr error
	for {
		n, err := src.Read(buf)
		if n > 0 && werr == nil {
			if _, werr = w.Write(buf[:n]); werr != nil {
				log.Warn("cannot write container log; discarding its output", "err", werr)
			}
		}
		if err != nil {
			break
		}
	}
	if werr == nil {
		if err := w.Close(); err != nil {
			log.Warn("cannot write container log", "err", err)
		}
	}
}

// watch waits for the instance's main process to exit, then finishes the
// instance as the package documentation describes and reports its exit.
func (r *Runtime) watch(in *instance, cmd *exec.Cmd, log *slog.Logger, logFile *os.File, pipes []*os.File, copied <-chan struct{}) {
	if err := waitExited(cmd.Process.Pid); err != nil {
		log.Error("wait for container", "err", err)
	}
	finishedAt := r.clock.Now()
	// Orphans die with their container. The leader is a zombie until it is
	// reaped below, so its group ID is still the container's.
	if err := in.signalGroup(unix.SIGKILL); err != nil {
		log.Warn("kill what is left of the container's process group", "err", err)
	}
	r.drain(log, pipes, copied)
	if err := logFile.Close(); err != nil {
		log.Warn("close container log", "err", err)
	}
	in.markReaped()
	werr := cmd.Wait()
	status := exitStatus(cmd.ProcessState, werr, finishedAt)
	log.Debug("container exited", "exitCode", status.ExitCode, "reason", status.Reason)

	ev := runtime.Event{PodUID: in.podUID, Container: in.container, ID: in.id, Exit: status}
	select {
	case r.events <- ev:
	case <-r.done:
		log.Debug("runtime closed; exit event dropped")
	}
}

// drain waits for both copy goroutines, cutting the pipes after
// drainTimeout, and closes the pipes.
func (r *Runtime) drain(log *slog.Logger, pipes []*os.File, copied <-chan struct{}) {
	timer := r.clock.NewTimer(drainTimeout)
	defer timer.Stop()
	for remaining := len(pipes); remaining > 0; {
		select {
		case <-copied:
			remaining--
		case <-timer.C():
			log.Warn("output pipes still open after the process group was killed; closing them", "timeout", drainTimeout)
			for _, p := range pipes {
				_ = p.SetReadDeadline(longAgo)
			}
		}
	}
	for _, p := range pipes {
		p.Close()
	}
}

// waitExited blocks until the process pid exited, without reaping it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return os.NewSyscallError("waitid", err)
			}
			return nil
		}
	}
}

// exitStatus turns a reaped process's state into an ExitStatus: a signal
// is 128+signal, as container runtimes report it.
func exitStatus(ps *os.ProcessState, waitErr error, finishedAt time.Time) runtime.ExitStatus {
	st := runtime.ExitStatus{FinishedAt: finishedAt}
	if ps == nil {
		st.ExitCode = 128
		st.Reason = runtime.ReasonError
		st.Message = fmt.Sprintf("wait for the process: %v", waitErr)
		return st
	}
	st.ExitCode = int32(exitCode(ps))
	st.Reason = runtime.ReasonCompleted
	if st.ExitCode != 0 {
		st.Reason = runtime.ReasonError
	}
	return st
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
