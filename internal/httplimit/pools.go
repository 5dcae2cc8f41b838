package httplimit

import (
	"container/list"
	"context"
	"net"
	"sync"
)

// DefaultMaxUnauthenticated is the kubelet port's pool of connections that
// have not authenticated (Limits.MaxUnauthenticated): a quarter of
// DefaultMaxConns, which leaves the other 192 to clients that did.
const DefaultMaxUnauthenticated = DefaultMaxConns / 4

// A pools listener splits Limits.MaxConns in two pools, so that clients
// that never authenticate cannot lock out those that do:
//
//	accepted ──▶ unauthenticated pool (MaxUnauthenticated, oldest first)
//	                 │ Authenticated(ctx) on one of its requests,
//	                 ▼ while the other pool has room
//	             authenticated pool (MaxConns - MaxUnauthenticated)
//
// Every accepted connection starts in the unauthenticated pool. When that
// pool is full, the connection that has been in it longest is closed to
// make room for the new one: Accept never waits, and a flood of idle
// connections only ever costs the flood's own oldest. A connection moves
// to the authenticated pool once a request on it authenticates, and there
// stays until it closes (its idle timeout, its client); when that pool is
// full, it stays where it was, closed in turn if it falls behind. Both
// pools together hold at most MaxConns.
type pools struct {
	net.Listener
	maxUnauth, maxAuth int

	mu     sync.Mutex
	unauth list.List // of *pooledConn, oldest at the front
	auth   int
}

// pooledConn is a connection of a pools listener.
type pooledConn struct {
	net.Conn
	p *pools

	// Under p.mu:
	elem  *list.Element // in p.unauth; nil when authenticated or gone
	state connState
	once  sync.Once
}

// connState is where a pooledConn is.
type connState int

const (
	unauthenticated connState = iota + 1
	authenticated
	gone // closed, or evicted from the unauthenticated pool
)

func newPools(ln net.Listener, maxConns, maxUnauth int) *pools {
	return &pools{Listener: ln, maxUnauth: maxUnauth, maxAuth: maxConns - maxUnauth}
}

// Accept returns the next connection, in the unauthenticated pool; the
// pool's oldest is closed first when it is full.
func (p *pools) Accept() (net.Conn, error) {
	c, err := p.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &pooledConn{Conn: c, p: p, state: unauthenticated}
	var evicted *pooledConn
	p.mu.Lock()
	if p.unauth.Len() >= p.maxUnauth {
		evicted = p.unauth.Remove(p.unauth.Front()).(*pooledConn)
		evicted.elem, evicted.state = nil, gone
	}
	pc.elem = p.unauth.PushBack(pc)
	p.mu.Unlock()
	if evicted != nil {
		// Its server goroutine sees the read fail and ends it.
		_ = evicted.Conn.Close()
	}
	return pc, nil
}

// promote moves c to the authenticated pool if it has room; it is
// idempotent.
func (c *pooledConn) promote() {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state != unauthenticated || p.auth >= p.maxAuth {
		return
	}
	p.unauth.Remove(c.elem)
	c.elem, c.state = nil, authenticated
	p.auth++
}

// Close frees c's place in its pool and closes it.
func (c *pooledConn) Close() error {
	c.once.Do(func() {
		p := c.p
		p.mu.Lock()
		switch c.state {
		case unauthenticated:
			p.unauth.Remove(c.elem)
		case authenticated:
			p.auth--
		}
		c.elem, c.state = nil, gone
		p.mu.Unlock()
	})
	return c.Conn.Close()
}

// connKey is the context key of a request's *pooledConn.
type connKey struct{}

// connContext records c in ctx when it is a pools connection (itself, or
// under TLS), for Authenticated.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if pc, ok := c.(*pooledConn); ok {
		return context.WithValue(ctx, connKey{}, pc)
	}
	return ctx
}

// Authenticated tells the listener that a request authenticated: its
// connection moves to the authenticated pool, if that has room (see
// Limits.MaxUnauthenticated). ctx is the request's; a request of a server
// without pools (or not set up by Apply) is ignored. Call it for each
// authenticated request; it is idempotent.
func Authenticated(ctx context.Context) {
	if pc, ok := ctx.Value(connKey{}).(*pooledConn); ok {
		pc.promote()
	}
}
