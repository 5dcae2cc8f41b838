package crilog

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// rotationGrace bounds how long a follower that found its file rotated
// waits for the file's writer to close it before it goes on in the new one.
const rotationGrace = 2 * time.Second

// followRotation goes on reading in the file now at the log's path once the
// log was rotated — renamed away, and a new file made at its path by its
// writer (LogFile) or by the runtime (ReopenContainerLog) — and returns the
// file being read. A following ReadLog calls it each time it has read f to
// its end; writerDone says the log's writer is done (Until was closed).
//
// The old file is read to its end until its writer is done with it — it
// closed it (IN_CLOSE_WRITE), or rotationGrace passed (see
// watcher.writerGone) — since a runtime may still write there what it had
// when it opened the new one; reading then goes on from the new file's
// start, through as many rotations as happened meanwhile. So a follower
// neither loses nor repeats a line across a rotation, as long as it is not
// more than one rotated file behind its writer: of the files rotated while
// it was still reading an older one, it reads only the one it was reading
// and the one now at the path (the kubelet's follower, which reopens the
// path at each rename, skips them too, and loses what is written to the
// old file after the rename). A record the old file ends without finishing
// is dropped: its writer never finishes a record in the next file.
func (lr *logReader) followRotation(f *os.File, w *watcher, writerDone bool) (*os.File, error) {
	for {
		next, err := openIfRotated(lr.path, f)
		if err != nil || next == nil {
			w.stillCurrent()
			return f, err
		}
		if !writerDone && !w.writerGone() {
			next.Close()
			return f, nil // read on in f; wait wakes at the end of the grace
		}
		if err := lr.readAvailable(); err != nil {
			next.Close()
			return f, err
		}
		f.Close()
		f = next
		if err := lr.restart(f); err != nil {
			return f, err
		}
		if err := w.rewatch(f); err != nil {
			return f, err
		}
		if err := lr.readAvailable(); err != nil {
			return f, err
		}
	}
}

// openIfRotated opens the file at path when it is not f any more; it
// returns nil while path still names f, or names nothing (the rotated
// log's new file is not there yet).
func openIfRotated(path string, f *os.File) (*os.File, error) {
	cur, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	old, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if os.SameFile(cur, old) {
		return nil, nil
	}
	next, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return next, err
}

// restart sets the reader up at the start of f, the new file of a rotated
// log: offsets count from its start again, and the tail's bounds were the
// old file's. A record the old file did not finish is given up: when some
// of it was delivered, its line is ended there (an empty last piece). A
// line whose records go on in the new file stays open: a writer rotates
// between records, not within one.
func (lr *logReader) restart(f *os.File) error {
	cut := lr.cur.active && lr.cur.deliver && lr.streams[lr.cur.stream].open
	lr.br.Reset(f)
	lr.rec = lr.rec[:0]
	lr.skip = false
	lr.cur.active = false
	lr.pos, lr.recStart, lr.lineNo, lr.fromStart = 0, 0, 0, true
	lr.from = [2]int64{}
	if !cut {
		return nil
	}
	s := &lr.streams[lr.cur.stream]
	s.open = false
	return lr.fn(Line{Time: s.time, Stream: streamName(lr.cur.stream), Continued: true})
}
