//go:build linux

package prober

import (
	"context"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux a tcpSocket probe to an IP address makes its own system calls
// instead of going through net.Dialer:
//
//	socket(SOCK_NONBLOCK|SOCK_CLOEXEC)   only when no idle socket is kept,
//	setsockopt(SO_LINGER on, 0 s)        see idleSockets
//	connect                              EINPROGRESS
//	ppoll(POLLOUT, no wait)              writable: open; an error: SO_ERROR says why
//	connect(AF_UNSPEC)                   reset; the socket is kept for the next probe
//
// Over loopback (and a veth) the kernel runs the whole handshake inside
// connect, so the socket is ready when it returns and the probe never
// touches the runtime's network poller: no epoll registration, no parked
// goroutine, no getsockname/getpeername. Only when the handshake is still
// going on (a remote or slow peer, a full accept queue) does the socket go
// to the poller, through os.NewFile, where the attempt's ctx can cut the
// wait short; that socket is closed afterwards, as is one whose connect
// failed.
//
// Probe connections end with a reset rather than a FIN (SO_LINGER on, 0
// s). The probe sends nothing, so a reset discards nothing of ours (and
// Linux resets anyway when the peer wrote a greeting we never read). A FIN
// leaves a TIME_WAIT socket for 60 s per attempt on whichever side closed
// first: 1,000 pods × 3 probes at periodSeconds 1 kept ~20,000 of them on
// loopback (where tcp_tw_reuse recycles them), and elsewhere a probed
// address:port runs out of ephemeral ports (28,232 by default) at ~470
// attempts/s. The handshake, the reset and the container's side cost less
// CPU than the FIN exchange. The kubelet sets SO_LINGER on with 1 s
// instead; on Linux that does not shorten TIME_WAIT but makes close wait
// for the FIN's ACK, which mostly moves TIME_WAIT to the container's side
// and costs both sides more CPU. The container sees the same connection,
// which it may accept, either way; a read on it gets ECONNRESET instead of
// end of file.

// netDialer dials the tcpSocket targets that are host names (the net
// package resolves them); their connections close with a reset too.
var netDialer = net.Dialer{KeepAlive: -1, Control: resetOnClose}

func resetOnClose(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) { serr = setLingerZero(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// setLingerZero makes close of socket fd send a reset and skip TIME_WAIT.
func setLingerZero(fd int) error {
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return nil
}

// dialIP opens a TCP connection to ap and closes it. Its errors are
// *net.OpError, as net.Dialer's.
func dialIP(ctx context.Context, ap netip.AddrPort) error {
	if err := connectClose(ctx, ap); err != nil {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: err}
	}
	return nil
}

// connectClose is dialIP's system calls. A failed connect is an
// *os.SyscallError ("connect: connection refused"); an ended ctx is
// ctx.Err().
func connectClose(ctx context.Context, ap netip.AddrPort) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	family, sa := sockaddr(ap)
	fd, err := idleSockets.get(family)
	if err != nil {
		return err
	}
	switch err := unix.Connect(fd, sa); err {
	case nil:
		idleSockets.put(family, fd)
		return nil
	case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
		// The handshake goes on without us; see where it is.
	default:
		_ = unix.Close(fd)
		return os.NewSyscallError("connect", err)
	}
	switch done, err := connectDone(fd); {
	case !done:
		return waitConnect(ctx, fd)
	case err != nil:
		_ = unix.Close(fd)
		return err
	}
	idleSockets.put(family, fd)
	return nil
}

// idleSockets keeps probe sockets between attempts. Creating a socket and
// freeing it is a quarter of the CPU a probe over loopback costs its
// process (BenchmarkProbeScheduling/tcpSocket-floor-*: ~50 µs an attempt
// with a fresh socket, ~37 µs with one kept). A socket whose connection
// opened is instead disconnected (connect to AF_UNSPEC, see connect(2)),
// which sends the same reset as close with SO_LINGER 0 (that close is a
// disconnect, then the free), and connects again next time.
var idleSockets socketCache

// maxIdleSockets bounds the sockets kept per address family. An attempt
// over loopback takes tens of µs, so even thousands of probes a second
// rarely have more than a few connecting at once.
const maxIdleSockets = 16

// socketCache holds unconnected TCP sockets (non-blocking, close-on-exec,
// SO_LINGER 0) by address family. They stay open for the life of the
// process: at most maxIdleSockets per family, bound to no port.
type socketCache struct {
	mu   sync.Mutex
	idle [2][]int // AF_INET, AF_INET6
}

func familyIndex(family int) int {
	if family == unix.AF_INET6 {
		return 1
	}
	return 0
}

// get returns an idle socket of family, or a new one. The caller owns it:
// it gives it back with put or closes it.
func (c *socketCache) get(family int) (int, error) {
	i := familyIndex(family)
	c.mu.Lock()
	if n := len(c.idle[i]); n > 0 {
		fd := c.idle[i][n-1]
		c.idle[i] = c.idle[i][:n-1]
		c.mu.Unlock()
		return fd, nil
	}
	c.mu.Unlock()
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := setLingerZero(fd); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// put disconnects fd, a socket of family from get whose connection opened
// (the peer gets a reset), and keeps it, or closes it when the cache is
// full or the disconnect failed. A socket whose connect failed is closed
// instead: its state is not worth reasoning about.
func (c *socketCache) put(family, fd int) {
	if err := disconnect(fd); err != nil {
		_ = unix.Close(fd)
		return
	}
	i := familyIndex(family)
	c.mu.Lock()
	if len(c.idle[i]) < maxIdleSockets {
		c.idle[i] = append(c.idle[i], fd)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	_ = unix.Close(fd)
}

// disconnect dissolves the connection of socket fd, which can then connect
// again: connect(2) to an AF_UNSPEC address. TCP resets the connection and
// gives its port back.
func disconnect(fd int) error {
	sa := unix.RawSockaddr{Family: unix.AF_UNSPEC}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	if errno != 0 {
		return os.NewSyscallError("connect", errno)
	}
	return nil
}

// connectDone says, without waiting, whether the non-blocking connect on
// fd has ended, and if so its error (nil: the connection opened).
//
// A TCP socket is writable once its handshake is done, and reports POLLERR
// or POLLHUP when the connect failed; only then is SO_ERROR read, so a
// success costs one poll.
func connectDone(fd int) (bool, error) {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	var now unix.Timespec // poll without waiting
	n, err := unix.Ppoll(pfd[:], &now, nil)
	switch {
	case err == unix.EINTR || (err == nil && n == 0):
		return false, nil
	case err != nil:
		return true, os.NewSyscallError("ppoll", err)
	case pfd[0].Revents&(unix.POLLERR|unix.POLLHUP) == 0 && pfd[0].Revents&unix.POLLOUT != 0:
		return true, nil
	}
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		return true, os.NewSyscallError("getsockopt", err)
	case soerr != 0:
		return true, os.NewSyscallError("connect", unix.Errno(soerr))
	}
	// Hung up without an error: opened, then closed both ways already.
	// It counts as open only if it has a peer, as in the net package.
	if _, err := unix.Getpeername(fd); err != nil {
		return true, os.NewSyscallError("getpeername", err)
	}
	return true, nil
}

// longAgo is a deadline that has passed.
var longAgo = time.Unix(1, 0)

// waitConnect waits in the runtime's poller until the connect on fd ends
// or ctx does, and closes fd.
func waitConnect(ctx context.Context, fd int) error {
	// fd is non-blocking, so the file is pollable and has deadlines. It
	// owns fd from here.
	f := os.NewFile(uintptr(fd), "tcp probe")
	defer func() { _ = f.Close() }()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(longAgo) })
	defer stop()
	var cerr error
	err = rc.Write(func(fd uintptr) bool {
		var done bool
		done, cerr = connectDone(int(fd))
		return done
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return err
	}
	return cerr
}

// sockaddr is the address family and socket address of ap.
func sockaddr(ap netip.AddrPort) (int, unix.Sockaddr) {
	if a := ap.Addr(); a.Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}
