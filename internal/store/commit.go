package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultDeferredDelay is how long a deferred write waits for a durable
// one to share its commit with, when Options.DeferredDelay is not set.
const DefaultDeferredDelay = 100 * time.Millisecond

// errClosed is the error of a write after Close.
var errClosed = errors.New("store closed")

// Writes are grouped: every write goes to one committer goroutine, which
// runs everything queued in one bbolt transaction, one commit (two
// fdatasyncs) for all of them. A durable write (the default) is committed
// at once: with the writes queued while the commit before it ran, so that
// concurrent writers share commits instead of queueing one each behind
// bbolt's writer lock. A deferred write guards nothing (events, timelines,
// a checkpoint whose caller waits for it later): it waits, for at most the
// deferred delay, for a durable write to ride along with, so that the
// writes behind the pod workers add no commit of their own while the
// workers commit anyway.
//
//	write ──> queue ──> committer: one transaction of all queued, in order
//	                    ──> commit (fsync) ──> each writer gets its outcome
//
// The writes of one batch run in the order they were queued. A write whose
// function fails fails alone: the transaction is rolled back and the
// others run again without it; a commit that fails (a full disk, say) is
// tried again one write at a time, so that each gets its own outcome and
// a large write does not fail a small one. So a write function may run
// more than once, each time in a new transaction, and must start from
// what it reads there.

// pendingWrite is one write waiting for its commit.
type pendingWrite struct {
	fn       func(*bolt.Tx) error
	deferred bool
	queued   time.Time
	done     chan error // buffered: the committer never waits on it
}

// committer owns the database's write transactions.
type committer struct {
	db    *bolt.DB
	delay time.Duration

	mu     sync.Mutex
	queue  []*pendingWrite
	closed bool

	kick    chan struct{} // 1-slot: something was queued
	closing chan struct{}
	stopped chan struct{}

	// commits counts the transactions committed, and onQueued, when set,
	// is told the queue's length after each write was queued: both for
	// the store's tests.
	commits  atomic.Int64
	onQueued func(n int)
}

func newCommitter(db *bolt.DB, delay time.Duration) *committer {
	c := &committer{
		db:      db,
		delay:   delay,
		kick:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go c.run()
	return c
}

// write queues fn and returns a wait for its outcome, which is nil once fn
// ran in a committed transaction. A deferred write is committed with the
// next durable one, or after the deferred delay.
func (c *committer) write(fn func(*bolt.Tx) error, deferred bool) (wait func() error) {
	w := &pendingWrite{fn: fn, deferred: deferred, queued: time.Now(), done: make(chan error, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return func() error { return errClosed }
	}
	c.queue = append(c.queue, w)
	n := len(c.queue)
	c.mu.Unlock()
	if c.onQueued != nil {
		c.onQueued(n)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = <-w.done })
		return err
	}
}

// update is a durable write: it returns once fn is committed.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	return c.write(fn, false)()
}

// close commits what is queued, refuses what comes later, and returns once
// the committer stopped.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.closing)
	}
	c.mu.Unlock()
	<-c.stopped
}

func (c *committer) run() {
	defer close(c.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		closing := false
		select {
		case <-c.kick:
		case <-timer.C:
		case <-c.closing:
			closing = true
		}
		batch, wait := c.take(closing)
		if len(batch) > 0 {
			c.commit(batch)
			continue
		}
		if closing {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

// take returns the queue to commit now: all of it, once it holds a
// durable write, its oldest deferred write waited the delay, or the
// committer is closing. Otherwise it returns how long until the oldest
// deferred write is due (0: nothing is queued).
func (c *committer) take(closing bool) ([]*pendingWrite, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil, 0
	}
	due := closing
	for _, w := range c.queue {
		if !w.deferred {
			due = true
			break
		}
	}
	if !due {
		left := c.delay - time.Since(c.queue[0].queued)
		if left > 0 {
			return nil, left
		}
	}
	batch := c.queue
	c.queue = nil
	return batch, 0
}

// commit runs batch in one transaction and tells each write its outcome,
// as the comment at the top says.
func (c *committer) commit(batch []*pendingWrite) {
	for len(batch) > 0 {
		failed := -1
		err := c.db.Update(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := w.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		switch {
		case failed >= 0:
			batch[failed].done <- err
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		case err != nil && len(batch) > 1:
			for _, w := range batch {
				c.commit([]*pendingWrite{w})
			}
			return
		}
		if err == nil {
			c.commits.Add(1)
		}
		for _, w := range batch {
			w.done <- err
		}
		return
	}
}
