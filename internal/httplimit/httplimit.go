package httplimit

import (
	"context"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// The kubelet's limits on its port (ListenAndServeKubeletServer).
const (
	// KubeletIdleTimeout closes a keep-alive connection with no request,
	// the keep-alive timeout of Go's default transport.
	KubeletIdleTimeout = 90 * time.Second
	// KubeletReadTimeout and KubeletWriteTimeout bound a whole request
	// and its response; the kubelet's 4 hours leave room for `logs -f`.
	KubeletReadTimeout  = 4 * time.Hour
	KubeletWriteTimeout = 4 * time.Hour
	// KubeletMaxHeaderBytes caps a request's header.
	KubeletMaxHeaderBytes = 1 << 20
	// DefaultReadHeaderTimeout bounds reading a request's header (and the
	// TLS handshake): a client that says nothing is closed. The kubelet
	// relies on its read timeout; ours is shorter.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultMaxConns caps the connections one listener holds; the next
	// waits in the listen backlog until one closes.
	DefaultMaxConns = 256
)

// Limits are the bounds of one server. A zero duration is no limit,
// except where a constructor documents a default.
type Limits struct {
	IdleTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	// ReadTimeout and WriteTimeout bound a whole request and its
	// response; zero for a server whose responses stream without end
	// (the agent's watches).
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration
	MaxHeaderBytes int
	// MaxConns is the most connections Listener lets in at once; zero is
	// no cap.
	MaxConns int
	// MaxUnauthenticated, when it is above zero and below MaxConns, is the
	// part of MaxConns that connections hold until a request on them
	// authenticates (the server calls Authenticated): a new connection
	// then closes the oldest of them instead of waiting, and the rest of
	// MaxConns is kept for connections that authenticated (see pools).
	// Zero (or a value not below MaxConns) is one pool: a connection over
	// MaxConns waits until one closes. A server without authentication
	// leaves it zero.
	MaxUnauthenticated int
}

// Kubelet returns the kubelet port's limits.
func Kubelet() Limits {
	return Limits{
		IdleTimeout:       KubeletIdleTimeout,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       KubeletReadTimeout,
		WriteTimeout:      KubeletWriteTimeout,
		MaxHeaderBytes:    KubeletMaxHeaderBytes,
		MaxConns:          DefaultMaxConns,
	}
}

// Streaming returns the limits of a server whose responses may stream
// for as long as the client wants (watches, `logs -f`, exec): the
// kubelet's, without the read and write timeouts.
func Streaming() Limits {
	l := Kubelet()
	l.ReadTimeout, l.WriteTimeout = 0, 0
	return l
}

// Apply sets l on srv. Call it before srv serves. It sets srv.ConnContext
// (calling the one srv had) so that Authenticated finds a request's
// connection.
func (l Limits) Apply(srv *http.Server) {
	if prev := srv.ConnContext; prev != nil {
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return connContext(prev(ctx, c), c)
		}
	} else {
		srv.ConnContext = connContext
	}
	srv.IdleTimeout = l.IdleTimeout
	srv.ReadHeaderTimeout = l.ReadHeaderTimeout
	srv.ReadTimeout = l.ReadTimeout
	srv.WriteTimeout = l.WriteTimeout
	srv.MaxHeaderBytes = l.MaxHeaderBytes
}

// Listener returns ln holding at most MaxConns connections at once (ln
// itself without a cap): Accept waits until one closes, or, with
// MaxUnauthenticated, closes the oldest connection that has not
// authenticated. Closing it closes ln.
func (l Limits) Listener(ln net.Listener) net.Listener {
	switch {
	case l.MaxConns <= 0:
		return ln
	case l.MaxUnauthenticated > 0 && l.MaxUnauthenticated < l.MaxConns:
		return newPools(ln, l.MaxConns, l.MaxUnauthenticated)
	default:
		return netutil.LimitListener(ln, l.MaxConns)
	}
}

// CloseAfter marks w's response as the connection's last: a 401 ends the
// connection of a client that could not authenticate, so that it cannot
// keep it. Call it before writing the header.
func CloseAfter(w http.ResponseWriter) { w.Header().Set("Connection", "close") }
