package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// poller waits, in one goroutine for the whole Runtime, for the file
// descriptors of every watched instance: its shim's pidfd (the shim
// exited) and its notices FIFO (the shim wrote). A goroutine parked per
// descriptor costs a stack of some 8 KB, and a runtime watches two per
// container: 6,000 goroutines for 1,000 pods of three containers. The
// poller has one epoll instance and one goroutine.
//
// A handler runs on the poller's goroutine: it must not block (it may
// start a goroutine). A descriptor added with once is dropped from the
// epoll set before its handler runs (EPOLLONESHOT, then removed);
// otherwise it stays until remove. The poller never closes a descriptor
// it was given: its owner does, after remove.
type poller struct {
	epfd int
	wake int // an eventfd: written by close to end the loop
	log  *slog.Logger
	done chan struct{} // closed when the loop returned

	mu       sync.Mutex
	next     int32
	handlers map[int32]pollEntry
	closed   bool
}

type pollEntry struct {
	fd      int
	once    bool
	handler func()
}

// wakeKey is the key of the eventfd; registrations count up from 1.
const wakeKey = 0

// pollBatch is how many ready descriptors one epoll_wait returns at most.
const pollBatch = 128

func newPoller(log *slog.Logger) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeKey}); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	p := &poller{epfd: epfd, wake: wake, log: log, done: make(chan struct{}), handlers: map[int32]pollEntry{}}
	go p.loop()
	return p, nil
}

// errPollerClosed is returned by add once the poller was closed.
var errPollerClosed = errors.New("poller closed")

// add watches fd for readability and returns its key, for remove. With
// once, handler runs at most once, the first time fd is readable.
func (p *poller) add(fd int, once bool, handler func()) (int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errPollerClosed
	}
	p.next++
	key := p.next
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: key}
	if once {
		ev.Events |= unix.EPOLLONESHOT
	}
	// Registered first: an event may come before EpollCtl returns.
	p.handlers[key] = pollEntry{fd: fd, once: once, handler: handler}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		delete(p.handlers, key)
		return 0, os.NewSyscallError("epoll_ctl", err)
	}
	return key, nil
}

// remove stops watching the descriptor of key; once it returns, its
// handler is not called again, unless it is running now (on the poller's
// goroutine). Removing a key twice, or after its once handler ran, does
// nothing.
func (p *poller) remove(key int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.handlers[key]
	if !ok {
		return
	}
	delete(p.handlers, key)
	if !p.closed {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, e.fd, nil)
	}
}

func (p *poller) loop() {
	defer close(p.done)
	events := make([]unix.EpollEvent, pollBatch)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			p.log.Error("wait for the shims", "err", os.NewSyscallError("epoll_wait", err))
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == wakeKey {
				return
			}
			p.mu.Lock()
			e, ok := p.handlers[ev.Fd]
			if ok && e.once {
				delete(p.handlers, ev.Fd)
				_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, e.fd, nil)
			}
			p.mu.Unlock()
			if ok {
				e.handler()
			}
		}
	}
}

// close ends the loop and waits for it; no handler runs once it returned.
// The descriptors added are their owners' to close.
func (p *poller) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	var one [8]byte
	one[0] = 1 // an eventfd counter is host-endian; any non-zero value wakes it
	if _, err := unix.Write(p.wake, one[:]); err != nil {
		p.log.Error("stop waiting for the shims", "err", fmt.Errorf("eventfd: %w", err))
	}
	<-p.done
	unix.Close(p.epfd)
	unix.Close(p.wake)
}
