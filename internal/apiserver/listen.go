package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
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

// Listen opens the unix socket at path for Serve. It creates the parent
// directory (0755) if needed. If a server answers on path it fails with an
// error matching ErrSocketInUse and leaves the socket alone; a stale socket
// (nobody answers) is removed first; any other file at path is an error.
// The socket is given SocketMode; it is owned by the calling user (root,
// when run as root). Closing the listener removes the socket file.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
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
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, SocketMode); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}
