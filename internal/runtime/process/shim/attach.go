package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// AttachSocket is the unix socket in the instance directory on which the
// shim serves attaches to its container while it runs.
//
// The protocol is podward's own, and small. The client writes one byte of
// flags (attachStdin, attachStdout, attachStderr), then frames; the shim
// writes frames back until the container exited and its output was
// copied, then closes the connection. A frame is a kind byte, a big-endian
// uint32 length and that many bytes:
//
//	client ──> frameStdin  bytes for the container's stdin
//	           frameStdinEnd  the client's stdin ended (stdinOnce: the
//	                          container's is closed, see console)
//	           frameResize    width, height: two big-endian uint16
//	shim   ──> frameStdout, frameStderr  the container's output (with a tty
//	                                     all of it is frameStdout)
//
// Output a client does not read fast enough is dropped for that client:
// the container never waits for an attach.
const AttachSocket = "attach.sock"

// The flags of an attach's first byte.
const (
	attachStdin byte = 1 << iota
	attachStdout
	attachStderr
)

// The frames' kinds.
const (
	frameStdin byte = iota + 1
	frameStdinEnd
	frameResize
)

const (
	frameStdout byte = iota + 1
	frameStderr
)

// maxFrame bounds a frame's payload; a larger one ends the attach.
const maxFrame = 1 << 20

// clientQueue is how many output frames wait for a slow client before
// further ones are dropped for it.
const clientQueue = 256

// console is the shim's side of its container's attaches: the container's
// stdin (the write end of its pipe, or the pty's master) and the clients
// its output is copied to.
type console struct {
	log *slog.Logger
	// in is where clients' stdin goes, nil when the container has none.
	in  *os.File
	tty bool
	// once: the container's stdin is closed after the first attach's
	// stdin ended (Kubernetes' stdinOnce). With a tty the master stays
	// open (it is the output too) and input is ignored from then on.
	once bool
	ln   net.Listener

	mu        sync.Mutex
	clients   map[*attachClient]struct{}
	stdinDone bool // once, and the first attach's stdin ended
	closed    bool
}

// attachClient is one attach: its output queue, closed when it goes.
type attachClient struct {
	out          chan []byte
	stdout, errs bool
}

// newConsole serves attaches on dir's AttachSocket. A socket that cannot
// be made is a warning: the container runs without attaches.
func newConsole(log *slog.Logger, dir string, in *os.File, tty, once bool) *console {
	c := &console{log: log, in: in, tty: tty, once: once, clients: map[*attachClient]struct{}{}}
	ln, err := listenIn(dir, AttachSocket)
	if err != nil {
		log.Warn("cannot serve attaches", "err", err)
		return c
	}
	c.ln = ln
	go c.serve()
	return c
}

func (c *console) serve() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		go c.attach(conn)
	}
}

// attach serves one client until the container's output ends (close) or
// the client goes.
func (c *console) attach(conn net.Conn) {
	defer conn.Close()
	var flags [1]byte
	if _, err := io.ReadFull(conn, flags[:]); err != nil {
		return
	}
	cl := &attachClient{out: make(chan []byte, clientQueue), stdout: flags[0]&attachStdout != 0, errs: flags[0]&attachStderr != 0}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.clients[cl] = struct{}{}
	c.mu.Unlock()
	inputDone := make(chan struct{})
	go func() {
		defer close(inputDone)
		c.input(conn, flags[0]&attachStdin != 0)
	}()
	for {
		select {
		case frame, ok := <-cl.out:
			if !ok {
				return
			}
			if _, err := conn.Write(frame); err != nil {
				c.leave(cl)
				return
			}
		case <-inputDone:
			// The client hung up: it reads nothing more.
			c.leave(cl)
			return
		}
	}
}

// leave forgets cl, unless close did already.
func (c *console) leave(cl *attachClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.clients[cl]; ok {
		delete(c.clients, cl)
		close(cl.out)
	}
}

// input reads the client's frames until it hangs up. Its stdin goes to
// the container's when it asked for stdin and the container has one.
func (c *console) input(conn net.Conn, stdin bool) {
	ended := false
	defer func() {
		if stdin && !ended {
			c.stdinEnded()
		}
	}()
	var head [5]byte
	for {
		if _, err := io.ReadFull(conn, head[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n > maxFrame {
			return
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(conn, payload); err != nil {
			return
		}
		switch head[0] {
		case frameStdin:
			if stdin && !ended && c.in != nil && !c.inputClosed() {
				// A container that does not read its stdin blocks this
				// client only.
				_, _ = c.in.Write(payload)
			}
		case frameStdinEnd:
			if stdin && !ended {
				ended = true
				c.stdinEnded()
			}
		case frameResize:
			if c.tty && len(payload) == 4 {
				c.resize(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
			}
		}
	}
}

func (c *console) inputClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdinDone
}

// stdinEnded is an attach's stdin that ended: with stdinOnce the
// container's stdin is closed (a pipe's write end; a pty's input is
// ignored from then on).
func (c *console) stdinEnded() {
	if !c.once || c.in == nil {
		return
	}
	c.mu.Lock()
	first := !c.stdinDone
	c.stdinDone = true
	c.mu.Unlock()
	if first && !c.tty {
		c.in.Close()
	}
}

// resize sets the pty's size.
func (c *console) resize(width, height uint16) {
	rc, err := c.in.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if err := unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: width, Row: height}); err != nil {
			c.log.Debug("resize the pty", "err", err)
		}
	})
}

// output copies p, the container's output on stream (frameStdout or
// frameStderr), to the clients that asked for it, dropping it for those
// whose queue is full.
func (c *console) output(stream byte, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.clients) == 0 {
		return
	}
	frame := make([]byte, 5+len(p))
	frame[0] = stream
	binary.BigEndian.PutUint32(frame[1:], uint32(len(p)))
	copy(frame[5:], p)
	for cl := range c.clients {
		if (stream == frameStdout && !cl.stdout) || (stream == frameStderr && !cl.errs) {
			continue
		}
		select {
		case cl.out <- frame:
		default:
		}
	}
}

// close ends every attach once the container's output was copied: their
// queues are written out, then their connections closed. The socket goes.
func (c *console) close() {
	if c.ln != nil {
		c.ln.Close()
	}
	c.mu.Lock()
	c.closed = true
	for cl := range c.clients {
		delete(c.clients, cl)
		close(cl.out)
	}
	c.mu.Unlock()
	if c.in != nil {
		c.in.Close()
	}
}

// inDir returns a path naming name in dir that fits a unix socket's
// address (108 bytes), through an O_PATH descriptor of dir when dir's own
// is too long, and the function that releases it.
func inDir(dir, name string) (string, func(), error) {
	p := filepath.Join(dir, name)
	if len(p) < 100 {
		return p, func() {}, nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name, func() { unix.Close(fd) }, nil
}

func listenIn(dir, name string) (net.Listener, error) {
	p, release, err := inDir(dir, name)
	if err != nil {
		return nil, err
	}
	defer release()
	_ = os.Remove(p)
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	// The file stays when the shim dies; the next listen replaces it.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, nil
}

// ErrNoAttach is returned by Attach for an instance whose shim serves no
// attaches: it exited, or an older shim started it.
var ErrNoAttach = errors.New("the container's shim serves no attach")

// AttachStreams are the client's side of an attach: each nil when not
// asked for.
type AttachStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Resize carries the client's terminal sizes (width, height).
	Resize <-chan [2]uint16
}

// Attach attaches to the container of the instance in dir and copies
// between it and s until the container's output ends (it exited) or done
// is closed. The client's stdin ending is passed on (see console).
func Attach(dir string, s AttachStreams, done <-chan struct{}) error {
	p, release, err := inDir(dir, AttachSocket)
	if err != nil {
		return err
	}
	conn, err := net.Dial("unix", p)
	release()
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
		return ErrNoAttach
	}
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{s.flags()}); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			conn.Close()
		case <-stop:
		}
	}()
	fw := &frameWriter{conn: conn}
	if s.Resize != nil {
		go fw.sendSizes(s.Resize, stop)
	}
	if s.Stdin != nil {
		go fw.sendInput(s.Stdin)
	}
	return readOutput(conn, s)
}

// flags are the streams s asks for, as the attach's first byte says them.
func (s AttachStreams) flags() byte {
	var flags byte
	if s.Stdin != nil {
		flags |= attachStdin
	}
	if s.Stdout != nil {
		flags |= attachStdout
	}
	if s.Stderr != nil {
		flags |= attachStderr
	}
	return flags
}

// frameWriter writes an attach client's frames to the shim, one at a time.
type frameWriter struct {
	mu   sync.Mutex
	conn net.Conn
}

func (w *frameWriter) send(kind byte, p []byte) error {
	frame := make([]byte, 5+len(p))
	frame[0] = kind
	binary.BigEndian.PutUint32(frame[1:], uint32(len(p)))
	copy(frame[5:], p)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.conn.Write(frame)
	return err
}

// sendSizes passes the client's terminal sizes on until sizes closes or
// stop does.
func (w *frameWriter) sendSizes(sizes <-chan [2]uint16, stop <-chan struct{}) {
	for {
		select {
		case size, ok := <-sizes:
			if !ok {
				return
			}
			var b [4]byte
			binary.BigEndian.PutUint16(b[:], size[0])
			binary.BigEndian.PutUint16(b[2:], size[1])
			if w.send(frameResize, b[:]) != nil {
				return
			}
		case <-stop:
			return
		}
	}
}

// sendInput passes the client's stdin on, and its end.
func (w *frameWriter) sendInput(in io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := in.Read(buf)
		if n > 0 && w.send(frameStdin, buf[:n]) != nil {
			return
		}
		if err != nil {
			_ = w.send(frameStdinEnd, nil)
			return
		}
	}
}

// readOutput copies the shim's output frames to s until the shim closes
// the connection.
func readOutput(conn net.Conn, s AttachStreams) error {
	var head [5]byte
	for {
		if _, err := io.ReadFull(conn, head[:]); err != nil {
			// The shim ended the attach (the container exited): a close,
			// or a reset when input of the client's was still unread.
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, unix.ECONNRESET) {
				return nil
			}
			return fmt.Errorf("attach: %w", err)
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n > maxFrame {
			return fmt.Errorf("attach: a frame of %d bytes", n)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(conn, payload); err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		w := s.Stdout
		if head[0] == frameStderr {
			w = s.Stderr
		}
		if w != nil {
			if _, err := w.Write(payload); err != nil {
				return fmt.Errorf("attach: %w", err)
			}
		}
	}
}
