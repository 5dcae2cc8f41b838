package crilog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Free space below which a LogFile reserves the room of each record before
// it writes it, and how often (in bytes written) it looks at the free
// space.
const (
	reserveBelow = 4 << 20
	checkEvery   = 64 << 10
)

// LogFile is a container instance's CRI log as its one writer holds it, the
// output of a Sink (see NewSink).
//
// It writes each record whole or not at all, so that a full disk drops
// records but never leaves a piece of one in the file, to which the next
// record would be glued: when the disk is nearly full it reserves each
// record's room first (fallocate, where the filesystem has it), and a write
// cut short anyway is truncated back.
//
// With a Rotation it rotates itself as the kubelet's container log manager
// rotates a log: once the file has reached MaxSize, before the next record,
// it is renamed to RotatedName (at most once a second) and a new file is
// opened at the same path; in the background the older rotated files are
// compressed and those beyond MaxFiles removed (PruneRotated). A reader
// following the log goes on in the new file (ReadLog).
//
// Its methods are not safe for concurrent use (the Sink serialises them);
// Close waits for the background tidying.
type LogFile struct {
	path   string
	policy Rotation
	clock  Clock
	warn   func(msg string, err error)

	f    *os.File
	size int64
	// checked counts the bytes written since the free space was looked
	// at; reserve is set while it is low.
	checked int64
	reserve bool
	// noReserve: the filesystem cannot reserve room (no fallocate).
	noReserve bool

	tidy     chan struct{} // 1 slot: prune the rotated files
	tidyDone chan struct{}
	tidyOnce sync.Once
}

// OpenLogFile opens (or creates, mode 0640) the log at path for appending.
// warn, when not nil, is told what goes wrong in the background or in a
// rotation (the log goes on in its current file); it is called without any
// lock held, from the writer's goroutine or the tidying one.
func OpenLogFile(path string, policy Rotation, clk Clock, warn func(msg string, err error)) (*LogFile, error) {
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	if warn == nil {
		warn = func(string, error) {}
	}
	f, size, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	l := &LogFile{path: path, policy: policy, clock: clk, warn: warn, f: f, size: size, checked: checkEvery}
	return l, nil
}

func openAppend(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// Write appends one whole record (the Sink calls it once per record). On
// an error nothing of the record is in the file and 0 is returned.
func (l *LogFile) Write(rec []byte) (int, error) {
	if l.policy.Enabled() && l.size >= l.policy.MaxSize {
		l.rotate()
	}
	if err := l.makeRoom(len(rec)); err != nil {
		return 0, err
	}
	n, err := l.f.Write(rec)
	if err == nil {
		l.size += int64(n)
		return n, nil
	}
	// Cut short: take the piece back, and be careful from now on.
	l.reserve = !l.noReserve
	if n > 0 {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.size += int64(n)
			l.warn("cannot take back a record the disk cut short; the log has a broken line", terr)
		}
	}
	return 0, err
}

// makeRoom reserves room for n bytes at the end of the file while the free
// space is low.
func (l *LogFile) makeRoom(n int) error {
	l.checked += int64(n)
	if l.checked >= checkEvery && !l.noReserve {
		l.checked = 0
		if free, err := freeSpace(l.f); err == nil {
			l.reserve = free < reserveBelow
		}
	}
	if !l.reserve {
		return nil
	}
	err := reserveRoom(l.f, l.size, int64(n))
	if errors.Is(err, errReserveUnsupported) {
		l.noReserve, l.reserve = true, false
		return nil
	}
	return err
}

// rotate renames the log and opens a new one at its path, unless it was
// rotated within this second; a failure is told to warn and the log goes
// on where it is.
func (l *LogFile) rotate() {
	rotated := RotatedName(l.path, l.clock.Now())
	if _, err := os.Lstat(rotated); !errors.Is(err, fs.ErrNotExist) {
		return // rotated this second already (or it cannot be told): later
	}
	if err := os.Rename(l.path, rotated); err != nil {
		l.warn("cannot rotate the container log", err)
		return
	}
	f, size, err := openAppend(l.path)
	if err != nil {
		if rerr := os.Rename(rotated, l.path); rerr != nil {
			l.warn("cannot put back a container log whose rotation failed; it goes on in "+rotated, rerr)
		}
		l.warn("cannot open a new container log after rotating it", err)
		return
	}
	if err := l.f.Close(); err != nil {
		l.warn("close the rotated container log", err)
	}
	l.f, l.size = f, size
	l.tidyOnce.Do(func() {
		l.tidy = make(chan struct{}, 1)
		l.tidyDone = make(chan struct{})
		go l.tidyLoop()
	})
	select {
	case l.tidy <- struct{}{}:
	default:
	}
}

// tidyLoop prunes the rotated files each time a rotation asks, until
// Close.
func (l *LogFile) tidyLoop() {
	defer close(l.tidyDone)
	for range l.tidy {
		if err := PruneRotated(l.path, l.policy.MaxFiles-1, 1); err != nil {
			l.warn("cannot tidy the rotated container logs", err)
		}
	}
}

// Sync commits the file to the disk.
func (l *LogFile) Sync() error { return l.f.Sync() }

// Close waits for the tidying of rotated files and closes the file.
func (l *LogFile) Close() error {
	if l.tidy != nil {
		close(l.tidy)
		<-l.tidyDone
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
