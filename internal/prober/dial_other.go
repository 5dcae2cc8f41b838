//go:build !linux

package prober

import (
	"context"
	"net"
	"net/netip"
)

// netDialer opens the connections of tcpSocket handlers: they carry no
// data, so they need no keep-alive probes.
var netDialer = net.Dialer{KeepAlive: -1}

// dialIP is dialNet: only Linux has a dialer of its own.
func dialIP(ctx context.Context, ap netip.AddrPort) error {
	return dialNet(ctx, ap.String())
}
