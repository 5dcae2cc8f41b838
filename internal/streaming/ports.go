package streaming

import (
	"context"
	"sync"
)

type portObserverKey struct{}

// ObservePorts returns ctx, for a port-forward's request, with observe:
// ServePortForward then calls it once for each port the client forwards
// to, when it forwards to that port the first time (SPDY names a port in
// each stream's headers, not in the request), before the runtime dials
// it. Through a runtime's own streaming server (a proxy) only the ports of
// the request's query are known (WebSocket's). observe may be called from
// several goroutines, never twice for one port of a request; it should
// not block. The servers use it for their audit lines.
func ObservePorts(ctx context.Context, observe func(port int32)) context.Context {
	return context.WithValue(ctx, portObserverKey{}, observe)
}

// portsSeen calls a request's port observer once per port.
type portsSeen struct {
	observer func(int32)
	mu       sync.Mutex
	seen     map[int32]bool
}

// newPortsSeen is the port observer of ctx (ObservePorts), nil without one.
func newPortsSeen(ctx context.Context) *portsSeen {
	fn, _ := ctx.Value(portObserverKey{}).(func(int32))
	if fn == nil {
		return nil
	}
	return &portsSeen{observer: fn, seen: make(map[int32]bool)}
}

// observe tells the observer of port the first time it is seen. A nil
// portsSeen does nothing.
func (p *portsSeen) observe(port int32) {
	if p == nil {
		return
	}
	p.mu.Lock()
	first := !p.seen[port]
	p.seen[port] = true
	p.mu.Unlock()
	if first {
		p.observer(port)
	}
}
