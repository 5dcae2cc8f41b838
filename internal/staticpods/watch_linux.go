package staticpods

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// watchMask is what the directory is watched for. Editors save by writing
// a temporary file and renaming it over the old one, hence the moves;
// IN_MODIFY only keeps a file that is still being written from being read
// before it settled.
const watchMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_MODIFY | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// watcher reads the inotify events of one directory on its own goroutine
// and sends them, a read's worth at a time, on events. events is closed
// when reading ends: after close, or when reading failed (see err).
type watcher struct {
	f      *os.File
	events chan []fsEvent
	quit   chan struct{}
	done   chan struct{}
	// readErr is written before events is closed and read after.
	readErr error
}

func newWatcher(dir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, os.NewSyscallError("inotify_add_watch", err))
	}
	w := &watcher{
		// The descriptor is non-blocking, so os.File puts it in the
		// runtime's poller and Close interrupts a pending Read.
		f:      os.NewFile(uintptr(fd), "inotify:"+dir),
		events: make(chan []fsEvent),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.read()
	return w, nil
}

func (w *watcher) read() {
	defer close(w.done)
	defer close(w.events)
	// Room for many events with the longest names.
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.readErr = fmt.Errorf("read inotify events: %w", err)
			}
			return
		}
		batch := parseEvents(buf[:n])
		if len(batch) == 0 {
			continue
		}
		select {
		case w.events <- batch:
		case <-w.quit:
			return
		}
	}
}

// err says why events was closed when it was not close: nil otherwise.
// Call it only once events is closed.
func (w *watcher) err() error { return w.readErr }

// close stops the watcher and waits for its goroutine; call it once.
func (w *watcher) close() {
	close(w.quit)
	_ = w.f.Close()
	<-w.done
}

// parseEvents decodes the inotify events in buf (struct inotify_event
// followed by its NUL-padded name) into what they mean for the Source.
// Events about subdirectories are dropped.
func parseEvents(buf []byte) []fsEvent {
	var out []fsEvent
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		start := off + unix.SizeofInotifyEvent
		end := start + nameLen
		if end > len(buf) {
			break
		}
		name := strings.TrimRight(string(buf[start:end]), "\x00")
		off = end
		if ev, ok := classify(mask, name); ok {
			out = append(out, ev)
		}
	}
	return out
}

func classify(mask uint32, name string) (fsEvent, bool) {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		return fsEvent{kind: evOverflow}, true
	case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED|unix.IN_UNMOUNT) != 0:
		return fsEvent{kind: evDirLost}, true
	case name == "" || mask&unix.IN_ISDIR != 0:
		return fsEvent{}, false
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0:
		return fsEvent{kind: evWritten, name: name}, true
	case mask&(unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		return fsEvent{kind: evChanged, name: name}, true
	case mask&unix.IN_MODIFY != 0:
		return fsEvent{kind: evModified, name: name}, true
	default:
		return fsEvent{}, false
	}
}
