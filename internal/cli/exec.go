package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

type execOptions struct {
	container  string
	stdin, tty bool
	quiet      bool
}

func newExecCommand(s Streams, api *apiOptions) *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [args...]",
		Short: "Run a command in a container",
		Long: `Exec runs COMMAND in a running container of pod POD, as kubectl exec does: in the
container's context (its volumes, environment, working directory and host name),
with its output printed here. -i passes this command's stdin on; with -t as well,
and a terminal as stdin, the command runs on a terminal of its own (raw mode here,
size changes passed on). The exit code is the command's.

Without -c the container is the one the pod's kubectl.kubernetes.io/default-container
annotation names, else the first regular container.`,
		Example: `  podward exec web -- date
  podward exec web -c sidecar -- cat /etc/hostname
  podward exec -it web -- sh`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 && len(args) > 1 {
				return usageError(errors.New("exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead"))
			}
			if dash == 0 {
				return usageError(errors.New("pod, type/name or --filename must be specified"))
			}
			if len(args) < 2 {
				return usageError(errors.New("you must specify at least one command for the container"))
			}
			return runExec(cmd.Context(), s, api, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container; defaults to the pod's default container")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "stdin is a TTY")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "only print output from the remote session")
	return cmd
}

func runExec(ctx context.Context, s Streams, api *apiOptions, o execOptions, arg string, command []string) error {
	c, pod, err := api.podOf(ctx, s, arg)
	if err != nil {
		return err
	}
	defer c.Close()
	name := pod.Name
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		fmt.Fprintf(s.Err, "error: cannot exec into a container in a completed pod; current phase is %s\n", pod.Status.Phase)
		return &ExitError{Code: ExitFailed}
	}
	container, err := execContainer(pod, o.container, o.quiet, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "error:", err)
		return &ExitError{Code: ExitFailed}
	}

	t := setupTTY(s, o)
	streams, done, err := t.streams(s, o.stdin, false)
	if err != nil {
		return report(s, err)
	}
	defer done()
	opts := v1.PodExecOptions{Container: container, Command: command, Stdin: o.stdin, Stdout: true, Stderr: !t.raw, TTY: t.raw}
	return remoteResult(s, c.Exec(ctx, api.namespace, name, opts, streams))
}

// remoteResult is what a verb that ran a command in a container (exec,
// cp) returns: nil, the command's own exit code with kubectl's words
// (cmdutil.CheckErr: "command terminated with exit code N"), or the error
// reported.
func remoteResult(s Streams, err error) error {
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.Exited():
		fmt.Fprintln(s.Err, exit.Error())
		return &ExitError{Code: exit.ExitStatus()}
	default:
		return report(s, err)
	}
}

// execContainer is the container an exec (or a cp) runs in, as kubectl
// picks it (pkg/cmd/util/podcmd): pickContainer without the defer
// containers, which an exec cannot reach.
func execContainer(pod *v1.Pod, name string, quiet bool, warn io.Writer) (string, error) {
	return pickContainer(pod, name, nil, quiet, warn)
}

// execTTY is the terminal of an exec: raw when the command gets a
// terminal (-i -t on a terminal stdin).
type execTTY struct {
	in, out *os.File // in is nil unless raw; out may be nil
	raw     bool
}

// setupTTY decides, as kubectl's SetupTTY, whether the command gets a
// terminal: only with -i and -t, and a terminal as stdin; otherwise -t is
// dropped, with kubectl's warning when stdin is not a terminal.
func setupTTY(s Streams, o execOptions) execTTY {
	if !o.stdin || !o.tty {
		return execTTY{}
	}
	in, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		if !o.quiet {
			fmt.Fprintln(s.Err, "Unable to use a TTY - input is not a terminal or the right kind of file")
		}
		return execTTY{}
	}
	t := execTTY{in: in, raw: true}
	if out, ok := s.Out.(*os.File); ok && term.IsTerminal(int(out.Fd())) {
		t.out = out
	}
	return t
}

// streams are what an exec or an attach sends and receives: stdin with
// -i; on a terminal, in raw mode, stderr merged into it and its size
// changes sent, first one larger when redraw is set (an attach, as
// kubectl's, so that a re-attached screen is redrawn). done restores the
// terminal and stops watching its size.
func (t execTTY) streams(s Streams, stdin, redraw bool) (streams remotecommand.StreamOptions, done func(), err error) {
	streams = remotecommand.StreamOptions{Stdout: s.Out, Stderr: s.Err, Tty: t.raw}
	if stdin {
		streams.Stdin = s.In
	}
	if !t.raw {
		return streams, func() {}, nil
	}
	streams.Stderr = nil
	restore, err := t.makeRaw()
	if err != nil {
		return streams, nil, err
	}
	sizes := t.monitorSize()
	streams.TerminalSizeQueue = sizes
	if size, ok := t.size(); ok && redraw {
		streams.TerminalSizeQueue = &firstSize{size: remotecommand.TerminalSize{Width: size.Width + 1, Height: size.Height + 1}, rest: sizes}
	}
	return streams, func() { sizes.stop(); restore() }, nil
}

// makeRaw puts the terminal in raw mode; restore puts it back.
func (t execTTY) makeRaw() (restore func(), err error) {
	st, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		return nil, fmt.Errorf("set the terminal to raw mode: %w", err)
	}
	return func() { _ = term.Restore(int(t.in.Fd()), st) }, nil
}

// size is the terminal's size: the output's, as kubectl reads it, else
// the input's.
func (t execTTY) size() (remotecommand.TerminalSize, bool) {
	for _, f := range []*os.File{t.out, t.in} {
		if f == nil {
			continue
		}
		if w, h, err := term.GetSize(int(f.Fd())); err == nil {
			return remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}, true
		}
	}
	return remotecommand.TerminalSize{}, false
}

// monitorSize returns the terminal's sizes: the current one, then one per
// SIGWINCH, until stop.
func (t execTTY) monitorSize() *sizeQueue {
	q := &sizeQueue{sizes: make(chan remotecommand.TerminalSize, 1), done: make(chan struct{}), winch: make(chan os.Signal, 1)}
	if size, ok := t.size(); ok {
		q.sizes <- size
	}
	signal.Notify(q.winch, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-q.done:
				return
			case <-q.winch:
				size, ok := t.size()
				if !ok {
					continue
				}
				select {
				case q.sizes <- size:
				case <-q.done:
					return
				}
			}
		}
	}()
	return q
}

// sizeQueue is a remotecommand.TerminalSizeQueue of the terminal's sizes.
type sizeQueue struct {
	sizes chan remotecommand.TerminalSize
	done  chan struct{}
	winch chan os.Signal
}

var _ remotecommand.TerminalSizeQueue = (*sizeQueue)(nil)

// Next blocks for the next size; nil once the queue is stopped.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case size := <-q.sizes:
		return &size
	case <-q.done:
		return nil
	}
}

func (q *sizeQueue) stop() {
	signal.Stop(q.winch)
	close(q.done)
}
