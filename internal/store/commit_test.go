package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
)

// waitTimeout bounds the waits of these tests; a test that passes never
// waits for it.
const waitTimeout = 10 * time.Second

// holdCommitter makes the committer run a transaction that waits until
// the returned release is called, and returns once it runs: what is
// written meanwhile queues behind it.
func holdCommitter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	running, release1 := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.w.update(func(*bolt.Tx) error {
			close(running)
			<-release1
			return nil
		})
	}()
	select {
	case <-running:
	case <-time.After(waitTimeout):
		t.Fatal("the holding transaction did not run")
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(release1)
			if err := <-done; err != nil {
				t.Errorf("holding transaction: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// watchQueue returns a wait until n writes are queued behind the
// committer. Call it before the writes.
func watchQueue(t *testing.T, s *Store) (waitQueued func(n int)) {
	t.Helper()
	lengths := make(chan int, 100)
	s.w.onQueued = func(n int) { lengths <- n }
	return func(n int) {
		t.Helper()
		timer := time.NewTimer(waitTimeout)
		defer timer.Stop()
		for {
			select {
			case got := <-lengths:
				if got >= n {
					return
				}
			case <-timer.C:
				t.Fatalf("fewer than %d writes queued within %v", n, waitTimeout)
			}
		}
	}
}

// Writes that come while a commit runs share the next commit, instead of
// queueing one commit each on the disk.
func TestConcurrentWritesShareACommit(t *testing.T) {
	s, _ := openTest(t, Options{})
	release := holdCommitter(t, s)
	waitQueued := watchQueue(t, s)
	before := s.w.commits.Load()
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.PutCheckpoint(types.UID(fmt.Sprintf("p%d", i)), []byte("cp")) }()
	}
	waitQueued(n)
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.w.commits.Load() - before; got != 2 {
		t.Errorf("%d commits for the holding transaction and %d checkpoints written meanwhile, want 2", got, n)
	}
	for i := range n {
		if _, err := s.GetCheckpoint(types.UID(fmt.Sprintf("p%d", i))); err != nil {
			t.Error(err)
		}
	}
}

// A deferred write (events) adds no commit of its own: it is committed with
// the next durable write.
func TestDeferredWriteRidesWithTheNextDurableOne(t *testing.T) {
	s, _ := openTest(t, Options{DeferredDelay: time.Hour})
	storePods(t, s, "p")
	waitQueued := watchQueue(t, s)
	before := s.w.commits.Load()
	appended := make(chan error, 1)
	go func() { appended <- s.AppendEvents(eventsOf("p", 3)) }()
	waitQueued(1)
	select {
	case err := <-appended:
		t.Fatalf("AppendEvents returned (%v) before any durable write, with an hour's delay", err)
	default:
	}
	if err := s.PutCheckpoint("p", []byte("cp")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("AppendEvents did not return once a durable write was committed")
	}
	if got := s.w.commits.Load() - before; got != 1 {
		t.Errorf("%d commits for a deferred and a durable write, want 1", got)
	}
	evs, err := s.ListEvents("p")
	if err != nil || len(evs) != 3 {
		t.Errorf("ListEvents = %d events, %v; want 3", len(evs), err)
	}
}

// With no durable write to share, a deferred write is committed after the
// delay.
func TestDeferredWriteCommitsAfterTheDelay(t *testing.T) {
	s, _ := openTest(t, Options{DeferredDelay: 5 * time.Millisecond})
	storePods(t, s, "p")
	done := make(chan error, 1)
	go func() { done <- s.PutTimelines(map[types.UID][]byte{"p": []byte("tl")}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("PutTimelines did not return")
	}
	if got, err := s.ListTimelines(); err != nil || string(got["p"]) != "tl" {
		t.Errorf("ListTimelines = %q, %v", got, err)
	}
}

// A deferred checkpoint is on disk once its wait returns, and a later write
// of the pod supersedes it in the same commit: DeletePod removes it.
func TestDeferredCheckpointThenDeletePodShareACommit(t *testing.T) {
	s, _ := openTest(t, Options{DeferredDelay: time.Hour})
	storePods(t, s, "p", "q")
	before := s.w.commits.Load()
	waitP := s.PutCheckpointDeferred("p", []byte("final"))
	waitQ := s.PutCheckpointDeferred("q", []byte("final"))
	if err := s.DeletePod("p"); err != nil {
		t.Fatal(err)
	}
	if err := waitP(); err != nil {
		t.Fatal(err)
	}
	if err := waitQ(); err != nil {
		t.Fatal(err)
	}
	if got := s.w.commits.Load() - before; got != 1 {
		t.Errorf("%d commits for two deferred checkpoints and a DeletePod, want 1", got)
	}
	if _, err := s.GetCheckpoint("p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("checkpoint of the deleted pod: %v, want ErrNotFound", err)
	}
	if got, err := s.GetCheckpoint("q"); err != nil || string(got) != "final" {
		t.Errorf("checkpoint of q = %q, %v", got, err)
	}
}

// Close commits what is deferred.
func TestCloseCommitsDeferredWrites(t *testing.T) {
	s, path := openTest(t, Options{DeferredDelay: time.Hour})
	storePods(t, s, "p")
	wait := s.PutCheckpointDeferred("p", []byte("final"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, err := s2.GetCheckpoint("p"); err != nil || string(got) != "final" {
		t.Errorf("checkpoint after reopening = %q, %v", got, err)
	}
}

// A write whose transaction function fails fails alone: the writes it
// shared a batch with are committed.
func TestFailingWriteFailsAlone(t *testing.T) {
	s, _ := openTest(t, Options{})
	release := holdCommitter(t, s)
	boom := errors.New("boom")
	first := s.w.write(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("a"), []byte("1")) }, false)
	bad := s.w.write(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put([]byte("bad"), []byte("x")); err != nil {
			return err
		}
		return boom
	}, false)
	last := s.w.write(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("b"), []byte("2")) }, false)
	release()
	if err := first(); err != nil {
		t.Errorf("first: %v", err)
	}
	if err := bad(); !errors.Is(err, boom) {
		t.Errorf("bad: %v, want boom", err)
	}
	if err := last(); err != nil {
		t.Errorf("last: %v", err)
	}
	for key, want := range map[string]string{"a": "1", "b": "2", "bad": ""} {
		if got, err := s.GetMeta(key); err != nil || got != want {
			t.Errorf("meta %q = %q, %v; want %q", key, got, err, want)
		}
	}
}

func eventsOf(uid types.UID, n int) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = event(uid, time.Unix(int64(i), 0), fmt.Sprintf("e%d", i))
	}
	return out
}
