package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// testListenEnv makes the test binary a container that listens on the
// address it holds, prints "listening PORT", and answers each
// connection's first line with "got LINE" (see TestMain).
const testListenEnv = "_PODWARD_TEST_LISTEN"

func runTestListener(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening %d\n", l.Addr().(*net.TCPAddr).Port)
	for {
		conn, err := l.Accept()
		if err != nil {
			return 1
		}
		line, _ := bufio.NewReader(conn).ReadString('\n')
		_, _ = conn.Write([]byte("got " + line))
		conn.Close()
	}
}

// listenerPod is a pod whose container app is this binary listening on
// addr, run through wrap (a command and its args, before the binary).
func listenerPod(t *testing.T, addr string, wrap ...string) *model.Pod {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := v1.Container{Name: "app", Command: append(wrap, self), Env: []v1.EnvVar{{Name: testListenEnv, Value: addr}}}
	return newPod(t, c)
}

// startListener starts pod's container and returns the port it listens
// on; the container is killed when the test ends.
func (h *harness) startListener(pod *model.Pod) int32 {
	h.t.Helper()
	h.prepare(pod)
	c := h.start(pod, 0)
	h.t.Cleanup(func() {
		_ = h.r.Signal(context.Background(), c.ID, syscall.SIGKILL)
		h.waitExit(c.ID)
	})
	line := h.waitOutput("app", "listening ")
	port, err := strconv.Atoi(strings.TrimPrefix(line, "listening "))
	if err != nil {
		h.t.Fatalf("the listener's line %q: %v", line, err)
	}
	return int32(port)
}

// forward sends "ping" through a port-forward to port of pod and returns
// what came back and PortForward's error.
func (h *harness) forward(pod *model.Pod, port int32) (string, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	client, server := net.Pipe()
	defer client.Close()
	done := make(chan error, 1)
	go func() { done <- h.r.PortForward(ctx, pod, port, server) }()
	go func() { _, _ = client.Write([]byte("ping\n")) }()
	got, _ := io.ReadAll(client)
	client.Close()
	return string(got), <-done
}

// hostListener is a service of the host, outside any pod, on addr; its
// accepted connections are sent on the returned channel.
func hostListener(t *testing.T, addr string) (int32, <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen on %s: %v", addr, err)
	}
	accepted := make(chan net.Conn, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		close(accepted)
		for c := range accepted {
			c.Close()
		}
	})
	return int32(l.Addr().(*net.TCPAddr).Port), accepted
}

// noneAccepted fails the test if the host's service took a connection.
func noneAccepted(t *testing.T, accepted <-chan net.Conn) {
	t.Helper()
	select {
	case <-accepted:
		t.Error("the host's service got a connection through the pod")
	default:
	}
}

// TestPortForwardReachesOnlyThePod: a port-forward reaches the pod's own
// listener both ways and ends when it closes its end; a port of the host
// that no process of the pod listens on is refused, naming the port and
// the pod, without connecting to it.
func TestPortForwardReachesOnlyThePod(t *testing.T) {
	h := newHarness(t)
	pod := listenerPod(t, "127.0.0.1:0")
	port := h.startListener(pod)
	if got, err := h.forward(pod, port); err != nil || got != "got ping\n" {
		t.Errorf("through the forward to the pod's port: %q, %v", got, err)
	}

	hostPort, accepted := hostListener(t, "127.0.0.1:0")
	_, err := h.forward(pod, hostPort)
	want := fmt.Sprintf("port %d of pod %s: no process of the pod listens on it", hostPort, pod.Key())
	if !errors.Is(err, ErrPortNotListened) || err == nil || err.Error() != want {
		t.Errorf("PortForward to the host's port = %v, want %q", err, want)
	}
	noneAccepted(t, accepted)

	other := newPod(t, shell("app", "exec sleep 100"))
	h.prepare(other)
	oc := h.start(other, 0)
	defer func() {
		_ = h.r.Signal(context.Background(), oc.ID, syscall.SIGKILL)
		h.waitExit(oc.ID)
	}()
	if _, err := h.forward(other, port); !errors.Is(err, ErrPortNotListened) {
		t.Errorf("PortForward to another pod's port = %v, want ErrPortNotListened", err)
	}
}

// TestPortForwardDialsTheFamilyThePodListensOn: a pod listening on ::1
// only is reached on ::1, not on 127.0.0.1 where the host has a service
// on the same port.
func TestPortForwardDialsTheFamilyThePodListensOn(t *testing.T) {
	h := newHarness(t)
	pod := listenerPod(t, "[::1]:0")
	port := h.startListener(pod)
	_, accepted := hostListener(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if got, err := h.forward(pod, port); err != nil || got != "got ping\n" {
		t.Errorf("through the forward to the pod's [::1]:%d: %q, %v", port, got, err)
	}
	noneAccepted(t, accepted)
}

// TestPortForwardCgroupFindsWhatLeftTheGroup: with cgroups, a listener
// that left its container's process group (setsid) is the pod's still,
// found in the container's cgroup.
func TestPortForwardCgroupFindsWhatLeftTheGroup(t *testing.T) {
	cg := testCgroups(t, 0)
	h := newHarnessWith(t, Config{Root: t.TempDir(), Cgroups: cg})
	pod := listenerPod(t, "127.0.0.1:0", "setsid", "-w")
	port := h.startListener(pod)
	if got, err := h.forward(pod, port); err != nil || got != "got ping\n" {
		t.Errorf("through the forward to the pod's port: %q, %v", got, err)
	}
}
