//go:build linux

package prober

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floorLoop opens a TCP connection to 127.0.0.1:port and resets it with
// the prober's system calls and nothing else — no scheduler, no worker
// goroutines, no contexts:
//
//	fresh socket:  socket, setsockopt(SO_LINGER 0), connect, ppoll, close
//	reused socket: connect, ppoll, connect(AF_UNSPEC) on one socket kept open
//
// The sockets are non-blocking, as the prober's: ppoll waits (if need be)
// for the handshake.
type floorLoop struct {
	sa    unix.SockaddrInet4
	reuse int // the kept socket, or -1
}

func newFloorLoop(port int, reuse bool) (*floorLoop, error) {
	f := &floorLoop{sa: unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}, reuse: -1}
	if reuse {
		fd, err := floorSocket()
		if err != nil {
			return nil, err
		}
		f.reuse = fd
	}
	return f, nil
}

func floorSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("setsockopt", err)
	}
	return fd, nil
}

// once makes one connection. The loop is used by one goroutine.
func (f *floorLoop) once() error {
	fd := f.reuse
	if fd < 0 {
		var err error
		if fd, err = floorSocket(); err != nil {
			return err
		}
		defer func() { _ = unix.Close(fd) }()
	}
	if err := unix.Connect(fd, &f.sa); err != nil && err != unix.EINPROGRESS {
		return os.NewSyscallError("connect", err)
	}
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	var now unix.Timespec
	if n, err := unix.Ppoll(pfd[:], &now, nil); err != nil || n == 0 || pfd[0].Revents != unix.POLLOUT {
		if _, err := unix.Ppoll(pfd[:], nil, nil); err != nil || pfd[0].Revents != unix.POLLOUT {
			return fmt.Errorf("ppoll: %v, revents %#x", err, pfd[0].Revents)
		}
	}
	if f.reuse < 0 {
		return nil
	}
	unspec := unix.RawSockaddr{Family: unix.AF_UNSPEC}
	if _, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&unspec)), unsafe.Sizeof(unspec)); errno != 0 {
		return os.NewSyscallError("connect AF_UNSPEC", errno)
	}
	return nil
}

func (f *floorLoop) close() {
	if f.reuse >= 0 {
		_ = unix.Close(f.reuse)
	}
}

// procCPU is the user and system CPU time process or thread pid has used,
// to the clock tick, or 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // state, ppid, …: utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick
}

// softirqThreads are the pids of the kernel's ksoftirqd threads: softirq
// work the kernel defers to them is counted to no process.
func softirqThreads() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.HasPrefix(string(comm), "ksoftirqd/") {
			pids = append(pids, pid)
		}
	}
	return pids
}
