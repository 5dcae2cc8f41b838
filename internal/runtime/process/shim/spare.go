package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// SpareEnv marks a spare shim: one started before its instance exists,
// which waits on its socket for the instance directory (StartOn).
const SpareEnv = "_PODWARD_PROCESS_SHIM_SPARE"

// ErrSpareGone is StartOn's error when the spare had died before it was
// given its instance: nothing of the instance was touched, and Start may
// start it.
var ErrSpareGone = errors.New("the spare shim is gone")

// Spare is a shim started ahead of the container it will hold, so that a
// start does not wait for this binary's exec and initialisation (tens of
// milliseconds of Go runtime and package init), only for the container's
// own fork and exec. It runs as any shim does, in a session of its own,
// with stdin, stdout and stderr /dev/null, and does nothing until StartOn
// gives it an instance directory, or its socket closes: then it exits. So
// a spare of an agent that died exits at once, holding nothing.
//
// A Spare is used once: by StartOn, or by Close. It is not safe for
// concurrent use.
type Spare struct {
	proc *Proc
	sock *os.File // ours: non-blocking
}

// StartSpare starts a spare shim of the binary bin (as Start's). marker
// goes into its command line ("podward-shim spare MARKER"), so that one
// can tell whose spare it is.
func StartSpare(bin, marker string) (*Spare, error) {
	ours, theirs, err := statusSocket()
	if err != nil {
		return nil, err
	}
	p, err := spawn(bin, []string{"podward-shim", "spare", marker}, shimEnv(SpareEnv+"=1"), nil, theirs)
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, err
	}
	return &Spare{proc: p, sock: ours}, nil
}

// Pid is the spare's process ID.
func (s *Spare) Pid() int { return s.proc.Ident().Pid }

// Close ends a spare that was not used: it exits once its socket is
// closed, and is reaped.
func (s *Spare) Close() {
	s.sock.Close()
	s.proc.waitGone()
	s.proc.Close()
}

// StartOn is Start with a spare shim: it gives spare the instance
// directory dir, which Create made, and goes on as Start does. The spare's
// stderr becomes dir's shim.log. When the spare had died, StartOn reaps it
// and fails with ErrSpareGone; otherwise the spare is used up, whatever
// the outcome.
func StartOn(ctx context.Context, dir string, spare *Spare) (*Proc, Started, error) {
	if err := ctx.Err(); err != nil {
		spare.Close()
		return nil, Started{}, err
	}
	// Far below a socket's buffer: the write does not wait for the spare.
	if _, err := spare.sock.Write([]byte(dir + "\n")); err != nil {
		spare.Close()
		return nil, Started{}, fmt.Errorf("%w: %w", ErrSpareGone, err)
	}
	defer spare.sock.Close()
	return confirm(ctx, dir, spare.proc, spare.sock)
}

// awaitInstance is a spare's wait for its instance directory, read on its
// status socket up to a newline. When the socket closes first, the spare
// is not wanted any more: it exits.
func awaitInstance() string {
	var dir []byte
	var b [1]byte
	for {
		// One byte at a time: nothing after the line is the spare's to read
		// here (Start's answer to the report comes much later).
		n, err := unix.Read(statusFD, b[:])
		switch {
		case n == 1 && b[0] == '\n':
			return string(dir)
		case n == 1:
			dir = append(dir, b[0])
		case errors.Is(err, unix.EINTR):
		default:
			os.Exit(0)
		}
	}
}

// redirectStderr makes shim.log in dir the shim's stderr, as Start makes
// it for a shim it starts itself. Without it the shim goes on with
// /dev/null: its warnings and errors still reach the agent as notices.
func redirectStderr(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, ShimLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.Dup3(int(f.Fd()), 2, 0)
}
