package process

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/creack/pty"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

var (
	_ runtime.StreamExecer   = (*Runtime)(nil)
	_ runtime.StreamAttacher = (*Runtime)(nil)
	_ runtime.PortForwarder  = (*Runtime)(nil)
)

// AttachStream attaches to the running instance of container ref through
// its shim, which holds the container's stdin and pty (shim.AttachSocket):
// the attach ends when the container exits or ctx ends, and neither the
// attach nor its end stops the container; an agent that restarted
// attaches again the same way.
func (r *Runtime) AttachStream(ctx context.Context, pod *model.Pod, ref model.ContainerRef, streams runtime.ExecStreams) error {
	if r.isClosed() {
		return errClosed
	}
	dir := r.runningDir(pod.UID, ref.Name)
	if dir == "" {
		return fmt.Errorf("attach to container %q of pod %s: %w", ref.Name, pod.Key(), runtime.ErrNotFound)
	}
	s := shim.AttachStreams{Stdout: streams.Stdout, Stderr: streams.Stderr}
	if c := pod.Container(ref); c != nil && c.Stdin && streams.Stdin != nil {
		s.Stdin = streams.Stdin
	}
	if streams.Resize != nil {
		sizes := make(chan [2]uint16)
		s.Resize = sizes
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-done:
					return
				case size, ok := <-streams.Resize:
					if !ok {
						return
					}
					select {
					case sizes <- [2]uint16{size.Width, size.Height}:
					case <-done:
						return
					}
				}
			}
		}()
	}
	if err := shim.Attach(dir, s, ctx.Done()); err != nil {
		return fmt.Errorf("attach to container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return ctx.Err()
}

// ExecStream runs cmd in the context of container ref of pod, as Exec does
// (its mount and UTS namespaces, cgroup, environment and working
// directory), with
// the client's streams: `kubectl exec`. With streams.TTY the command runs
// on a pty the agent holds, in a session of its own with the pty as its
// controlling terminal; the client's size changes are applied to the pty
// (the kernel sends the command SIGWINCH). Without it, its stdout and
// stderr are pipes copied to the streams, and its stdin, when asked, a
// pipe fed from streams.Stdin and closed when that ends. Like Exec's, the
// command dies with the agent.
func (r *Runtime) ExecStream(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string, streams runtime.ExecStreams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if r.isClosed() {
		return 0, errClosed
	}
	if len(cmd) == 0 {
		return 0, fmt.Errorf("exec in container %q of pod %s: empty command", ref.Name, pod.Key())
	}
	code, err := r.execStream(ctx, pod, ref, cmd, streams)
	if err != nil {
		return code, fmt.Errorf("exec %q in container %q of pod %s: %w", cmd[0], ref.Name, pod.Key(), err)
	}
	return code, nil
}

func (r *Runtime) execStream(ctx context.Context, pod *model.Pod, ref model.ContainerRef, argv []string, streams runtime.ExecStreams) (int, error) {
	spec, release, err := r.execSpec(ctx, pod, ref, argv)
	if err != nil {
		return 0, err
	}
	defer release()
	log := r.log.With("pod", pod.Key(), "podUID", pod.UID, "container", ref.Name)
	if streams.TTY {
		master, slave, err := execPTY(spec)
		if err != nil {
			return 0, fmt.Errorf("open a pty: %w", err)
		}
		resized := make(chan struct{})
		defer close(resized)
		go applySizes(master, streams.Resize, resized)
		if streams.Stdin != nil {
			go copyInput(master, streams.Stdin, false)
		}
		var out io.Writer = io.Discard
		if streams.Stdout != nil {
			out = streams.Stdout
		}
		stdio := launch.Stdio{In: slave, Out: slave, Err: slave, Terminal: true}
		return r.runTied(ctx, pod, ref, spec, stdio, []output{{master, out}}, log)
	}

	var stdio launch.Stdio
	var outputs []output
	for _, s := range []struct {
		to    io.Writer
		child **os.File
	}{{streams.Stdout, &stdio.Out}, {streams.Stderr, &stdio.Err}} {
		if s.to == nil {
			continue
		}
		rd, wr, err := os.Pipe()
		if err != nil {
			closeAll(stdio, outputs)
			return 0, err
		}
		*s.child = wr
		outputs = append(outputs, output{rd, s.to})
	}
	if streams.Stdin != nil {
		rd, wr, err := os.Pipe()
		if err != nil {
			closeAll(stdio, outputs)
			return 0, err
		}
		stdio.In = rd
		go copyInput(wr, streams.Stdin, true)
	}
	return r.runTied(ctx, pod, ref, spec, stdio, outputs, log)
}

// closeAll closes the pipes made for an exec that does not start.
func closeAll(stdio launch.Stdio, outputs []output) {
	for _, f := range []*os.File{stdio.In, stdio.Out, stdio.Err} {
		if f != nil {
			f.Close()
		}
	}
	for _, o := range outputs {
		o.r.Close()
	}
}

// copyInput copies the client's stdin to the command's until either ends;
// with closeAtEnd (a pipe) the command's stdin is closed then, so that it
// reads its end. A pty is not closed: its master end is the command's
// output too, which runTied drains and closes. The copy ends at the
// latest when the stream is closed, once the exec is done.
func copyInput(to *os.File, from io.Reader, closeAtEnd bool) {
	_, _ = io.Copy(to, from)
	if closeAtEnd {
		to.Close()
	}
}

// applySizes sets the pty's size to each size the client sends, until
// sizes is closed or done is.
func applySizes(master *os.File, sizes <-chan runtime.TerminalSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case size, ok := <-sizes:
			if !ok {
				return
			}
			_ = pty.Setsize(master, &pty.Winsize{Rows: size.Height, Cols: size.Width})
		}
	}
}
