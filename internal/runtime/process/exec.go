package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// drainTimeout bounds how long Exec waits for the command's output pipe to
// close once its process group was killed: a grandchild that left the
// group (setsid) may hold it open for ever.
const drainTimeout = 2 * time.Second

// execOutputLimit caps the output Exec returns; the rest is read and
// dropped, so that the command never blocks on a full pipe.
const execOutputLimit = 10 * 1024

// Exec runs cmd in the context of container ref of pod: the same volumes at
// the same paths, the same environment and working directory. cmd is run as
// written, without $(VAR) expansion, like Kubernetes' exec hooks and probes.
// It returns the combined stdout and stderr (the first 10 KiB) and the exit
// code (128+signal for a signal). When ctx ends first, the command's process
// group is killed and the error wraps ctx.Err(). A command that cannot be
// started is an error too. Exec does not need the container to run. The
// command dies with the agent, and the next Runtime on the root kills the
// rest of its process group (see "Execs die with the agent" in the
// package's doc).
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
	spec, _, err := r.prepare(pod, ref, pod.Container(ref), argv, r.runningTermFile(pod.UID, ref.Name))
	if err != nil {
		return nil, 0, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	log := r.log.With("pod", pod.Key(), "podUID", pod.UID, "container", ref.Name)
	var record string
	proc, err := launch.StartTied(ctx, spec, outW, outW, func(pid int) { record = r.recordExec(pid, log) })
	outW.Close()
	if err != nil {
		r.forgetExec(record, log)
		outR.Close()
		if ctx.Err() != nil {
			// The context ended while the command was being set up:
			// Start killed it, whether or not it had begun to run.
			return nil, 128 + int(unix.SIGKILL), ctx.Err()
		}
		return nil, 0, err
	}
	pid := proc.Pid()

	var out cappedBuffer
	copied := make(chan struct{}, 1)
	go func() {
		_, _ = io.Copy(&out, outR)
		copied <- struct{}{}
	}()

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
	launch.DrainPipes(r.clock, drainTimeout, log, []*os.File{outR}, copied)
	ps, _ := proc.Wait()
	if waitErr != nil {
		return out.bytes(), 0, waitErr
	}
	code := launch.ExitCode(ps)
	if ctxKilled {
		return out.bytes(), code, ctx.Err()
	}
	return out.bytes(), code, nil
}

// runningTermFile is the termination-message file of the running instance
// of the container (the newest, should there be more), which an exec in
// its context sees at its terminationMessagePath as the container does: a
// preStop hook may write the message. "" when none runs or it has none.
func (r *Runtime) runningTermFile(uid types.UID, container string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	file, attempt := "", -1
	for _, in := range r.instances {
		if in.podUID == uid && in.container == container && in.attempt > attempt && in.exitStatus() == nil {
			file, attempt = in.termFile, in.attempt
		}
	}
	return file
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
