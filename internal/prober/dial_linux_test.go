//go:build linux

package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// acceptAndClose serves l until it is closed, closing what it accepts.
func acceptAndClose(t *testing.T, l net.Listener) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
}

// closedPortOn is a port on ip that nothing listens on.
func closedPortOn(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("no %s here: %v", ip, err)
	}
	port := portOf(t, l.Addr().String())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

func TestDialTCP(t *testing.T) {
	l4, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acceptAndClose(t, l4)
	port4 := strconv.Itoa(portOf(t, l4.Addr().String()))
	port6 := ""
	if l6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		acceptAndClose(t, l6)
		port6 = strconv.Itoa(portOf(t, l6.Addr().String()))
	}
	closed4 := strconv.Itoa(closedPortOn(t, "127.0.0.1"))

	type dialCase struct {
		addr    string
		ipv6    bool
		raw     bool   // dialled with dialIP, not the net package
		wantErr string // the whole message; empty for a success
	}
	tests := map[string]dialCase{
		"IPv4":                {addr: "127.0.0.1:" + port4, raw: true},
		"IPv4-mapped IPv6":    {addr: "[::ffff:127.0.0.1]:" + port4, raw: true},
		"IPv6":                {addr: "[::1]:" + port6, ipv6: true, raw: true},
		"host name":           {addr: "localhost:" + port4},
		"IPv6 with a zone":    {addr: "[::1%lo]:" + port6, ipv6: true},
		"IPv4 refused":        {addr: "127.0.0.1:" + closed4, raw: true, wantErr: "dial tcp 127.0.0.1:" + closed4 + ": connect: connection refused"},
		"IPv4-mapped refused": {addr: "[::ffff:127.0.0.1]:" + closed4, raw: true, wantErr: "dial tcp 127.0.0.1:" + closed4 + ": connect: connection refused"},
	}
	if port6 != "" {
		closed6 := strconv.Itoa(closedPortOn(t, "::1"))
		tests["IPv6 refused"] = dialCase{addr: "[::1]:" + closed6, ipv6: true, raw: true, wantErr: "dial tcp [::1]:" + closed6 + ": connect: connection refused"}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.ipv6 && port6 == "" {
				t.Skip("no IPv6 loopback")
			}
			target := newTCPTarget(tc.addr)
			if target.ip.IsValid() != tc.raw {
				t.Errorf("newTCPTarget(%q).ip = %v, want it valid: %v", tc.addr, target.ip, tc.raw)
			}
			err := dialTCP(testContext(t), &target)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("dialTCP(%s) = %v, want success", tc.addr, err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("dialTCP(%s) = %v, want %q", tc.addr, err, tc.wantErr)
			case tc.wantErr != "" && !errors.Is(err, syscall.ECONNREFUSED):
				t.Errorf("dialTCP(%s) = %#v, want it to wrap ECONNREFUSED", tc.addr, err)
			}
		})
	}
}

// The container sees a probe as a connection that ends with a reset, and
// the agent keeps no TIME_WAIT socket for it.
func TestDialTCPResets(t *testing.T) {
	for name, host := range map[string]string{"IP": "127.0.0.1", "host name": "localhost"} {
		t.Run(name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			target := newTCPTarget(net.JoinHostPort(host, strconv.Itoa(portOf(t, l.Addr().String()))))
			if err := dialTCP(testContext(t), &target); err != nil {
				t.Fatal(err)
			}
			c, err := l.Accept() // the probe's connection is in the queue, reset
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the container read %v, want ECONNRESET", err)
			}
		})
	}
}

// fullListener listens on 127.0.0.1 and never accepts; its accept queue
// is full, so the kernel drops the SYN of a new connection, whose connect
// stays in progress (the SYN is sent again after 1 s, 3 s, …). accept takes
// one connection off the queue, which lets the next SYN in.
func fullListener(t *testing.T) (port int, accept func()) {
	t.Helper()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(lfd) })
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	port = sa.(*unix.SockaddrInet4).Port
	// Open connections until one stays in progress.
	for range 16 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port})
		if err != nil && err != unix.EINPROGRESS {
			t.Fatal(err)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			_ = unix.Close(fd)
			accept = func() {
				c, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
				if err != nil {
					t.Error(err)
					return
				}
				_ = unix.Close(c)
			}
			return port, accept
		}
		t.Cleanup(func() { _ = unix.Close(fd) })
	}
	t.Fatal("the accept queue does not fill up")
	return 0, nil
}

func TestDialTCPPending(t *testing.T) {
	t.Run("ctx ends the wait", func(t *testing.T) {
		port, _ := fullListener(t)
		target := newTCPTarget(fmt.Sprintf("127.0.0.1:%d", port))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- dialTCP(ctx, &target) }()
		cancel()
		err := <-done
		if want := fmt.Sprintf("dial tcp 127.0.0.1:%d: context canceled", port); err == nil || err.Error() != want {
			t.Errorf("dialTCP = %v, want %q", err, want)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("dialTCP = %#v, want it to wrap context.Canceled", err)
		}
	})

	// waitConnect is the slow path itself, for connects that are known
	// to be in progress.
	pending := func(t *testing.T, port int) int {
		t.Helper()
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != unix.EINPROGRESS {
			_ = unix.Close(fd)
			t.Fatalf("connect = %v, want EINPROGRESS", err)
		}
		if done, err := connectDone(fd); done {
			_ = unix.Close(fd)
			t.Fatalf("the connect ended at once (%v), want it in progress", err)
		}
		return fd
	}
	t.Run("deadline", func(t *testing.T) {
		port, _ := fullListener(t)
		ctx, cancel := context.WithDeadline(context.Background(), time.Now())
		defer cancel()
		if err := waitConnect(ctx, pending(t, port)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waitConnect = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		port, _ := fullListener(t)
		fd := pending(t, port)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- waitConnect(ctx, fd) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("waitConnect = %v, want context.Canceled", err)
		}
	})
	t.Run("the connection opens later", func(t *testing.T) {
		port, accept := fullListener(t)
		fd := pending(t, port)
		accept() // the SYN sent again after 1 s gets in
		if err := waitConnect(testContext(t), fd); err != nil {
			t.Errorf("waitConnect = %v, want success", err)
		}
	})
}

// A tcpSocket probe whose connect stays in progress times out at its
// timeoutSeconds, cut off by the scheduler.
func TestTCPProbeTimeout(t *testing.T) {
	port, _ := fullListener(t)
	h := newHarness(t)
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}},
		TimeoutSeconds: 2, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 1,
	}})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	idle := func() bool { return h.m.schedulerIdle(h.clk.Now()) }
	h.waitFor("the scheduler to sleep", idle)
	h.clk.Step(2 * time.Second)
	h.settle()
	got := h.expect(Result{Container: "app", Kind: Liveness, Healthy: false, Changed: true, Failed: true})
	if want := fmt.Sprintf("dial tcp 127.0.0.1:%d timed out after 2s", port); got[0].Output != want {
		t.Errorf("Output = %q, want %q", got[0].Output, want)
	}
}

// idleFDs is a copy of the sockets idleSockets keeps for family.
func idleFDs(family int) []int {
	idleSockets.mu.Lock()
	defer idleSockets.mu.Unlock()
	return slices.Clone(idleSockets.idle[familyIndex(family)])
}

func TestDialTCPReusesSockets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	open := newTCPTarget(l.Addr().String())
	refused := newTCPTarget(fmt.Sprintf("127.0.0.1:%d", closedPort(t)))
	ctx := testContext(t)

	if err := dialTCP(ctx, &open); err != nil {
		t.Fatal(err)
	}
	before := idleFDs(unix.AF_INET)
	if len(before) == 0 {
		t.Fatal("no idle socket after a probe")
	}
	for i := range 3 {
		if err := dialTCP(ctx, &open); err != nil {
			t.Fatal(err)
		}
		if after := idleFDs(unix.AF_INET); !slices.Equal(after, before) {
			t.Fatalf("probe %d: idle sockets %v, want %v again", i, after, before)
		}
	}
	// Each probe opened a connection of its own, and reset it.
	for range 4 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("the container read %v, want ECONNRESET", err)
		}
		_ = c.Close()
	}

	// A socket whose connect failed is not kept.
	if err := dialTCP(ctx, &refused); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialTCP = %v, want connection refused", err)
	}
	if after := idleFDs(unix.AF_INET); !slices.Equal(after, before[:len(before)-1]) {
		t.Errorf("idle sockets after a refused probe %v, want %v", after, before[:len(before)-1])
	}
	if err := dialTCP(ctx, &open); err != nil {
		t.Errorf("dialTCP after a refused probe = %v", err)
	}

	// At most maxIdleSockets are kept.
	var fds []int
	for range maxIdleSockets + 2 {
		fd, err := idleSockets.get(unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	for _, fd := range fds {
		idleSockets.put(unix.AF_INET, fd)
	}
	if n := len(idleFDs(unix.AF_INET)); n != maxIdleSockets {
		t.Errorf("%d idle sockets, want %d", n, maxIdleSockets)
	}
}

// The attempt makes a handful of system calls and allocates little.
func TestDialTCPAllocs(t *testing.T) {
	// A listener that does not accept, so that nothing else allocates
	// while the probes run: the queue keeps their reset connections.
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 1024); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	target := newTCPTarget(fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port))
	ctx := testContext(t)
	allocs := testing.AllocsPerRun(100, func() {
		if err := dialTCP(ctx, &target); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations per attempt, want at most 1 (the socket address)", allocs)
	}
}
