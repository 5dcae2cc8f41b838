package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stamps collects the timestamps the containers write: each container's
// first act is `echo $EPOCHREALTIME > DIR/POD.CONTAINER`, so the file's
// content is when the container's own code ran, by the machine's real-time
// clock, which the bench reads too. One inotify watch of DIR tells the
// bench when a file is complete (closed after writing).
type stamps struct {
	dir string
	fd  int

	mu      sync.Mutex
	got     map[string]time.Time
	bad     map[string]error
	waiters map[string][]chan struct{}
	err     error
	dead    chan struct{}
}

func newStamps(dir string) (*stamps, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	// Containers of any user write here (and, on the CRI runtime, through
	// a hostPath mount).
	if err := os.Chmod(dir, 0o1777); err != nil {
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	s := &stamps{
		dir: dir, fd: fd,
		got: map[string]time.Time{}, bad: map[string]error{},
		waiters: map[string][]chan struct{}{}, dead: make(chan struct{}),
	}
	go s.run()
	return s, nil
}

// close ends the watch.
func (s *stamps) close() {
	// Closing the descriptor does not end a blocked read: a wake-up file
	// does, then the reader closes it.
	_ = os.WriteFile(filepath.Join(s.dir, ".close"), nil, 0o600)
	<-s.dead
}

func (s *stamps) run() {
	defer close(s.dead)
	defer unix.Close(s.fd)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(s.fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			s.fail(fmt.Errorf("read inotify: %w", err))
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(bytes.TrimRight(nameBytes, "\x00"))
			if name == ".close" {
				s.fail(errors.New("stamps closed"))
				return
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				s.fail(errors.New("inotify queue overflow"))
				return
			}
			s.read(name)
		}
	}
}

func (s *stamps) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *stamps) read(name string) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	var at time.Time
	if err == nil {
		at, err = parseEpochRealtime(string(b))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.bad[name] = fmt.Errorf("stamp %s: %w", name, err)
	} else {
		s.got[name] = at
	}
	for _, ch := range s.waiters[name] {
		close(ch)
	}
	delete(s.waiters, name)
}

// parseEpochRealtime reads bash's $EPOCHREALTIME: seconds since the epoch
// with a fractional part of (usually) six digits.
func parseEpochRealtime(text string) (time.Time, error) {
	text = strings.TrimSpace(text)
	sec, frac, _ := strings.Cut(text, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("not $EPOCHREALTIME: %q", text)
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("not $EPOCHREALTIME: %q", text)
		}
		for i := len(frac); i < 9; i++ {
			f *= 10
		}
		ns = f
	}
	return time.Unix(s, ns), nil
}

// wait returns the stamps of names once all are written, until ctx ends.
// Each stamp is consumed: its file is removed.
func (s *stamps) wait(ctx context.Context, names []string) ([]time.Time, error) {
	out := make([]time.Time, len(names))
	for i, name := range names {
		at, err := s.waitOne(ctx, name)
		if err != nil {
			return nil, err
		}
		out[i] = at
	}
	return out, nil
}

func (s *stamps) waitOne(ctx context.Context, name string) (time.Time, error) {
	for {
		s.mu.Lock()
		if at, ok := s.got[name]; ok {
			delete(s.got, name)
			s.mu.Unlock()
			_ = os.Remove(filepath.Join(s.dir, name))
			return at, nil
		}
		if err, ok := s.bad[name]; ok {
			s.mu.Unlock()
			return time.Time{}, err
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return time.Time{}, err
		}
		ch := make(chan struct{})
		s.waiters[name] = append(s.waiters[name], ch)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.dead:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the timestamp of %s: %w", name, ctx.Err())
		}
	}
}
