package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/tcplisten"
)

// ErrPortNotListened is a port-forward refused because no process of the
// pod listens on the port.
var ErrPortNotListened = errors.New("no process of the pod listens on it")

// procRoot is where the processes' files are read from.
const procRoot = "/proc"

// PortForward connects to port on the pod's network, which on the process
// runtime is the host's, but only to a socket of the pod's own: a TCP
// socket listening on port, on the any or the loopback address, that one
// of the pod's processes has open (podProcesses). It dials the loopback
// addresses that reach such a socket (IPv4 first, then IPv6), as
// containerd dials localhost in the pod's network namespace, so that a
// port of the host (or of another pod) is never reached through this pod.
// No such socket is ErrPortNotListened, naming the port and the pod. The
// check is made when the stream opens: a pod that closes its socket and a
// host service that takes the port in between is not caught. It copies
// both ways until the server's side ends (or ctx does), and closes stream.
func (r *Runtime) PortForward(ctx context.Context, pod *model.Pod, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port-forward to pod %s: invalid port %d", pod.Key(), port)
	}
	pids, err := r.podProcesses(pod.UID)
	if err != nil {
		return fmt.Errorf("port %d of pod %s: find the pod's processes: %w", port, pod.Key(), err)
	}
	reach, err := tcplisten.Find(procRoot, pids, uint16(port))
	if err != nil {
		return fmt.Errorf("port %d of pod %s: find its listening sockets: %w", port, pod.Key(), err)
	}
	if !reach.Any() {
		return fmt.Errorf("port %d of pod %s: %w", port, pod.Key(), ErrPortNotListened)
	}
	conn, err := dialFirst(ctx, reach.Hosts(), port)
	if err != nil {
		return fmt.Errorf("port-forward to pod %s: connect to port %d on the host's loopback: %w", pod.Key(), port, err)
	}
	return copyForward(ctx, conn, stream, pod, port)
}

// dialFirst connects to port on the first of hosts that takes the
// connection.
func dialFirst(ctx context.Context, hosts []string, port int32) (net.Conn, error) {
	var d net.Dialer
	var errs []error
	for _, host := range hosts {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// copyForward copies between conn and stream both ways until conn's side
// ends (or ctx does), and closes conn.
func copyForward(ctx context.Context, conn net.Conn, stream io.ReadWriter, pod *model.Pod, port int32) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	// The client's side ends when it is done sending (the server then
	// reads its end), or when the client drops the stream once it read
	// the server's end; conn is closed on return.
	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err := io.Copy(stream, conn)
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("port-forward to pod %s port %d: %w", pod.Key(), port, err)
	}
	return nil
}

// podProcesses are the processes of the pod's running container
// instances: with cgroups, every process in each instance's cgroup (its
// container's, and the execs run in it); in any case each instance's main
// process and the members of its process group (without cgroups, what
// left the group, and the execs, which run in groups of their own, are
// not found). The caller owns the result.
func (r *Runtime) podProcesses(uid types.UID) ([]int, error) {
	r.mu.Lock()
	var running []*instance
	for _, in := range r.byPod[uid] {
		if in.exitStatus() == nil && in.proc.Pid > 0 {
			running = append(running, in)
		}
	}
	r.mu.Unlock()
	seen := make(map[int]bool)
	groups := make(map[int]bool)
	for _, in := range running {
		seen[in.proc.Pid], groups[in.proc.Pid] = true, true
		if in.cgroup == nil {
			continue
		}
		procs, err := in.cgroup.Procs()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("processes of container %q: %w", in.container, err)
		}
		for _, p := range procs {
			seen[p] = true
		}
	}
	if len(groups) > 0 {
		members, err := groupMembers(procRoot, groups)
		if err != nil {
			return nil, err
		}
		for _, p := range members {
			seen[p] = true
		}
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	return pids, nil
}

// groupMembers lists the processes whose process group is one of groups,
// from procRoot's stat files. A process that exits meanwhile is skipped.
func groupMembers(procRoot string, groups map[int]bool) ([]int, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list the processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(procRoot + "/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if pgrp, ok := statPgrp(data); ok && groups[pgrp] {
			out = append(out, pid)
		}
	}
	return out, nil
}

// statPgrp is the process group (field 5) of a /proc/<pid>/stat. The
// command name, field 2, is in parentheses and may hold anything: the
// fields after its last ')' start with field 3.
func statPgrp(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	return pgrp, err == nil
}
