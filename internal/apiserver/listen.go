package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/podward/podward/internal/sockdir"
)

// ErrSocketInUse is returned by Listen when a server already answers on
// the socket: another agent runs.
var ErrSocketInUse = errors.New("socket in use")

// SocketMode is the socket's permission: its owner (root when the agent
// runs as root) and group may connect.
const SocketMode fs.FileMode = 0o660

// probeTimeout bounds the connection attempt that tells a live socket from
// a stale one.
const probeTimeout = time.Second

// maxSocketPath is the longest path a unix socket can be bound to
// (sun_path's 108 bytes less the terminating NUL).
const maxSocketPath = 107

// Listen opens the unix socket at path for Serve. Its directory must meet
// its sockdir rule (a per-user directory: the user's own, mode 0700, not a
// symbolic link); it is created if needed (sockdir.Prepare). If a server
// answers on path it fails with an error matching ErrSocketInUse and
// leaves the socket alone; a stale socket (nobody answers) is removed
// first; any other file at path is an error.
//
// The socket appears at path with SocketMode already set: it is bound in
// a private (0700) directory beside path, given its mode there, where
// nobody else can reach it, and then linked at path. Setting the mode
// after binding at path would let a user the umask lets in connect in
// between, and keep the connection; changing the umask around the bind
// instead would change it for every goroutine of the process. The socket
// is owned by the calling user (root, when run as root). Closing the
// listener removes the socket file, unless another has replaced it.
func Listen(path string) (net.Listener, error) {
	if err := sockdir.Prepare(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	case fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("listen on %s: the path exists and is not a socket", path)
	default:
		conn, err := net.DialTimeout("unix", path, probeTimeout)
		if err == nil {
			_ = conn.Close()
			return nil, fmt.Errorf("listen on %s: %w: another podward agent (or another server) answers on it; stop it first", path, ErrSocketInUse)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	l, err := bindAndLink(path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}

// bindAndLink binds a socket with SocketMode in a fresh 0700 directory
// beside path, links it at path, and removes the directory. A file that
// appeared at path meanwhile is never replaced: that is ErrSocketInUse.
func bindAndLink(path string) (*socketListener, error) {
	private, err := os.MkdirTemp(filepath.Dir(path), ".l")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(private)
	bound := filepath.Join(private, "s")
	if len(bound) > maxSocketPath {
		return nil, fmt.Errorf("the socket's directory is too long: binding the socket in %s takes %d bytes, more than %d", private, len(bound), maxSocketPath)
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The bound name goes with its directory; the listener removes path.
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (*socketListener, error) {
		_ = ul.Close()
		return nil, err
	}
	if err := os.Chmod(bound, SocketMode); err != nil {
		return fail(err)
	}
	if err := os.Link(bound, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("%w: a socket appeared meanwhile (another agent starting?)", ErrSocketInUse))
		}
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return &socketListener{UnixListener: ul, path: path, fi: fi}, nil
}

// socketListener is a listener bound through another name than path: its
// Close removes path, the name clients use, if it is still this socket.
type socketListener struct {
	*net.UnixListener
	path   string
	fi     fs.FileInfo
	remove sync.Once
}

// Addr is path: the bound name is gone.
func (l *socketListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	l.remove.Do(func() {
		if fi, statErr := os.Lstat(l.path); statErr == nil && os.SameFile(fi, l.fi) {
			_ = os.Remove(l.path)
		}
	})
	return err
}
