package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerCred is the credentials of a unix-socket client: the process that
// connected, as the kernel recorded it then (SO_PEERCRED).
type peerCred struct {
	PID      int32
	UID, GID uint32
}

// peerAddr is the remote address of a connection whose peer's credentials
// are known: the http.Server's ConnContext finds them there, and its
// String is the request's RemoteAddr.
type peerAddr struct {
	net.Addr
	cred peerCred
}

func (a peerAddr) String() string {
	return fmt.Sprintf("pid=%d,uid=%d,gid=%d", a.cred.PID, a.cred.UID, a.cred.GID)
}

// credConn is a unix connection whose RemoteAddr carries its peer's
// credentials, so that they survive the wrappers of other listeners
// (httplimit's), which pass RemoteAddr on.
type credConn struct {
	*net.UnixConn
	addr peerAddr
}

func (c credConn) RemoteAddr() net.Addr { return c.addr }

// credListener reads the peer's credentials of each unix connection it
// accepts. A connection of another kind, or whose credentials cannot be
// read, is passed on as it is: its requests are audited without them.
type credListener struct{ net.Listener }

func (l credListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c, nil
	}
	cred, err := readPeerCred(uc)
	if err != nil {
		return c, nil
	}
	return credConn{UnixConn: uc, addr: peerAddr{Addr: uc.RemoteAddr(), cred: cred}}, nil
}

// readPeerCred reads SO_PEERCRED of c.
func readPeerCred(c *net.UnixConn) (peerCred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peerCred{}, fmt.Errorf("peer credentials: %w", err)
	}
	var ucred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		ucred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peerCred{}, fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return peerCred{}, fmt.Errorf("peer credentials: %w", credErr)
	}
	return peerCred{PID: ucred.Pid, UID: ucred.Uid, GID: ucred.Gid}, nil
}

type peerKey struct{}

// withPeer is the http.Server's ConnContext: ctx with c's peer's
// credentials, when its listener (credListener) read them.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	if a, ok := c.RemoteAddr().(peerAddr); ok {
		return context.WithValue(ctx, peerKey{}, a.cred)
	}
	return ctx
}

// audit writes the one line of a stream served (an exec, an attach, a
// port of a port-forward): at Info, the verb, the pod, the container, and
// the client's credentials, with attrs (the command, the port). A client
// whose credentials are unknown is logged as such (peer="unknown").
func (s *Server) audit(r *http.Request, verb, pod, container string, attrs ...slog.Attr) {
	all := []slog.Attr{slog.String("verb", verb), slog.String("pod", pod)}
	if container != "" {
		all = append(all, slog.String("container", container))
	}
	all = append(all, attrs...)
	if cred, ok := r.Context().Value(peerKey{}).(peerCred); ok {
		all = append(all, slog.Int("peerPID", int(cred.PID)), slog.Uint64("peerUID", uint64(cred.UID)), slog.Uint64("peerGID", uint64(cred.GID)))
	} else {
		all = append(all, slog.String("peer", "unknown"))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "audit", all...)
}

// quoteArgv is a command line for the log: each argument Go-quoted (its
// spaces, quotes and control characters escaped), separated by spaces, so
// that the arguments can be told apart and no byte of theirs reaches the
// log raw.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}
