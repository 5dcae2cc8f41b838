package prober

import (
	"context"
	"net/netip"
)

// tcpTarget is where a tcpSocket handler connects, parsed once so that an
// attempt does not parse it again.
type tcpTarget struct {
	// addr is "host:port" as the handler names it; errors show it.
	addr string
	// ip is addr when its host is an IP address without a zone (an
	// IPv4-mapped IPv6 address is unmapped, as the net package does):
	// such a target is dialled with raw system calls where the platform
	// allows. Otherwise it is the zero AddrPort, and the net package
	// resolves and dials addr.
	ip netip.AddrPort
}

func newTCPTarget(addr string) tcpTarget {
	t := tcpTarget{addr: addr}
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Zone() == "" {
		t.ip = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return t
}

// dialTCP opens a TCP connection to t and ends it at once (with a reset on
// Linux, see dial_linux.go): a tcpSocket probe only asks whether a
// connection opens. ctx bounds the attempt (the
// probe's timeout, or its removal); dialTCP sets no timeout of its own.
// Errors read as the net package's: "dial tcp 127.0.0.1:80: connect:
// connection refused".
func dialTCP(ctx context.Context, t *tcpTarget) error {
	if !t.ip.IsValid() {
		return dialNet(ctx, t.addr)
	}
	return dialIP(ctx, t.ip)
}

// dialNet dials addr with the net package, which resolves a host name.
func dialNet(ctx context.Context, addr string) error {
	conn, err := netDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err // *net.OpError: "dial tcp: lookup …", "dial tcp [::1]:80: connect: …"
	}
	_ = conn.Close() // the probe succeeded once the connection opened
	return nil
}
