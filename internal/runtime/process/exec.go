package process

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// drainTimeout bounds how long Exec waits for the command's output pipe to
// close once its process group was killed: a grandchild that left the
// group (setsid) may hold it open for ever.
const drainTimeout = 2 * time.Second

// execOutputLimit caps the output Exec returns; the rest is read and
// dropped, so that the command never blocks on a full pipe.
const execOutputLimit = 10 * 1024

// Exec runs cmd in the context of container ref of pod (execSpec): while
// the container runs, in its own mount and UTS namespaces and its cgroup,
// so that the command sees what the container sees (its volumes, what it
// mounted itself, the host name it set), with the container's environment
// and working directory. cmd is run as written, without $(VAR) expansion,
// like Kubernetes' exec hooks and probes. It returns the combined stdout
// and stderr (the first 10 KiB) and the exit code (128+signal for a
// signal). When ctx ends first, the command's process group is killed and
// the error wraps ctx.Err(). A command that cannot be started is an error
// too. Exec does not need the container to run: without a running
// instance the command gets namespaces of its own with the container's
// volumes and host name. The command dies with the agent, and the next
// Runtime on the root kills the rest of its process group (see "Execs die
// with the agent" in the package's doc).
func (r *Runtime) Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) (output []byte, exitCode int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if r.isClosed() {
		return nil, 0, errClosed
	}
	if len(cmd) == 0 {
		return nil, 0, fmt.Errorf("exec in container %q of pod %s: empty command", ref.Name, pod.Key())
	}
	output, exitCode, err = r.exec(ctx, pod, ref, cmd)
	if err != nil {
		return output, exitCode, fmt.Errorf("exec %q in container %q of pod %s: %w", cmd[0], ref.Name, pod.Key(), err)
	}
	return output, exitCode, nil
}

func (r *Runtime) exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, argv []string) ([]byte, int, error) {
	spec, release, err := r.execSpec(ctx, pod, ref, argv)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	var out cappedBuffer
	log := r.log.With("pod", pod.Key(), "podUID", pod.UID, "container", ref.Name)
	code, err := r.runTied(ctx, pod, ref, spec, launch.Stdio{Out: outW, Err: outW}, []output{{outR, &out}}, log)
	return out.bytes(), code, err
}

// execSpec is the launch spec of argv run in the context of container
// ref of pod (prepare's environment and working directory) and, while the
// container runs, in that of its running instance, as a CRI runtime's exec
// is in its container: its cgroup (its usage is the container's, within
// its limits) and its own mount and UTS namespaces (containerNamespaces),
// where Dir and argv[0] are resolved as the container sees them. When none
// runs (a hook or probe racing the container's exit), the command gets
// namespaces of its own with the volumes and host name the container
// started with (prepare's). The caller calls release once the command
// started or failed to.
func (r *Runtime) execSpec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, argv []string) (spec launch.Spec, release func(), err error) {
	in := r.running(pod.UID, ref.Name)
	termFile := ""
	if in != nil {
		termFile = in.termFile
	}
	ev, err := r.execEnv(ctx, pod, ref, in)
	if err != nil {
		return launch.Spec{}, nil, err
	}
	if spec, _, err = r.prepare(pod, ref, pod.Container(ref), ev, argv, termFile); err != nil {
		return launch.Spec{}, nil, err
	}
	if in == nil {
		return spec, func() {}, nil
	}
	spec.Cgroup = in.cgroup
	if spec.Join, err = containerNamespaces(in); err != nil {
		return launch.Spec{}, nil, fmt.Errorf("container %s: %w", in.id, err)
	}
	return spec, spec.Join.Close, nil
}

// execEnv is the environment of an exec in container ref of pod: that
// its running instance in started with, as a CRI runtime's exec has its
// container's (a ConfigMap changed or deleted since does not change it);
// the container's as it would start now when none runs (or its instance
// was started by an agent that did not record it).
func (r *Runtime) execEnv(ctx context.Context, pod *model.Pod, ref model.ContainerRef, in *instance) (containerEnviron, error) {
	if in != nil && in.env != nil {
		vars := make(podspec.Vars, len(in.env))
		for _, kv := range in.env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		return containerEnviron{env: in.env, vars: vars}, nil
	}
	env, vars, err := r.containerEnv(ctx, pod, pod.Container(ref), ref.SpecPath())
	return containerEnviron{env, vars}, err
}

// containerNamespaces opens the mount and UTS namespaces of in's
// container: those of its main process, which its shim started and
// recorded (container.json, which a Runtime that attached to the instance
// read again), as shim.Namespaces says. nil when that process is gone:
// the container is exiting.
func containerNamespaces(in *instance) (*launch.Namespaces, error) {
	return shim.Namespaces(in.proc)
}

// output is one read end of a command's output and where it is copied.
type output struct {
	r  *os.File
	to io.Writer
}

// runTied starts spec tied to the agent (launch.StartTiedStdio) with
// stdio, whose files it closes once the command started (they are the
// child's ends), copies each of outputs until its writers are gone, and
// waits for the command. Once it exited, the rest of its process group is
// killed and the outputs drained (bounded by drainTimeout) and closed. It
// returns the exit code (128+signal for a signal); when ctx ends first,
// the process group is killed and the error is ctx.Err().
func (r *Runtime) runTied(ctx context.Context, pod *model.Pod, ref model.ContainerRef, spec launch.Spec, stdio launch.Stdio, outputs []output, log *slog.Logger) (int, error) {
	var record string
	started := func(pid int) {
		record = r.recordExec(pid, log)
	}
	proc, err := launch.StartTiedStdio(ctx, spec, stdio, started)
	for _, f := range []*os.File{stdio.In, stdio.Out, stdio.Err} {
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		r.forgetExec(record, log)
		for _, o := range outputs {
			o.r.Close()
		}
		if ctx.Err() != nil {
			// The context ended while the command was being set up:
			// Start killed it, whether or not it had begun to run.
			return 128 + int(unix.SIGKILL), ctx.Err()
		}
		return 0, err
	}
	pid := proc.Pid()

	copied := make(chan struct{}, len(outputs))
	pipes := make([]*os.File, len(outputs))
	for i, o := range outputs {
		pipes[i] = o.r
		go func() {
			_, _ = io.Copy(o.to, o.r)
			copied <- struct{}{}
		}()
	}

	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(killed)
		_ = unix.Kill(-pid, unix.SIGKILL)
	})
	waitErr := launch.WaitExited(pid)
	ctxKilled := !stop()
	if ctxKilled {
		// The kill may still be on its way: it must land before the reap
		// below frees the PID.
		<-killed
	}
	// Like a container's, an exec's orphans die with it; the leader is not
	// reaped yet.
	_ = unix.Kill(-pid, unix.SIGKILL)
	r.forgetExec(record, log)
	launch.DrainPipes(r.clock, drainTimeout, log, pipes, copied)
	ps, _ := proc.Wait()
	if waitErr != nil {
		return 0, waitErr
	}
	code := launch.ExitCode(ps)
	if ctxKilled {
		return code, ctx.Err()
	}
	return code, nil
}

// running is the newest running instance of container in pod uid (should
// there be more), nil when none runs.
func (r *Runtime) running(uid types.UID, container string) *instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	var newest *instance
	for _, in := range r.byPod[uid] {
		if in.container == container && (newest == nil || in.attempt > newest.attempt) && in.exitStatus() == nil {
			newest = in
		}
	}
	return newest
}

// runningDir is the instance directory of the newest running instance of
// container in pod uid, "" when none runs.
func (r *Runtime) runningDir(uid types.UID, container string) string {
	if in := r.running(uid, container); in != nil {
		return in.dir
	}
	return ""
}

// cappedBuffer keeps the first execOutputLimit bytes written to it and
// swallows the rest.
type cappedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := execOutputLimit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *cappedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf
}
