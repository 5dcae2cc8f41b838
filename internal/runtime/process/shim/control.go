package shim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrExited is returned by Signal when no shim reads the instance's control
// FIFO any more: the instance exited, or its shim died.
var ErrExited = errors.New("instance exited")

// Signal asks the shim of the instance directory dir to send sig to the
// container's process group. The shim does it unless the container's main
// process was reaped, so the signal never reaches a process group whose ID
// was reused. It returns once the request is queued, not once the signal
// was delivered; it never blocks.
func Signal(dir string, sig syscall.Signal) error {
	path := filepath.Join(dir, ControlFile)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENOENT):
		// ENXIO: a FIFO nobody has open for reading.
		return ErrExited
	case err != nil:
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	// Less than PIPE_BUF bytes: written whole or not at all.
	msg := []byte(strconv.Itoa(int(sig)) + "\n")
	for {
		_, err = unix.Write(fd, msg)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// readControl calls fn for every signal number written to the control FIFO
// r until r fails; it skips, and logs, what is not a signal number.
func readControl(r io.Reader, log *slog.Logger, fn func(syscall.Signal)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil || n <= 0 || n > 64 {
			log.Warn("control: not a signal number", "request", sc.Text())
			continue
		}
		fn(syscall.Signal(n))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read control: %w", err)
	}
	return nil
}
