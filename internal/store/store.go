package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/podward/podward/internal/events"
)

var (
	// ErrNotFound is matched (errors.Is) by the error of a Get for a key
	// that is not stored.
	ErrNotFound = errors.New("not found")
	// ErrLocked is matched by the error of Open when another process (or
	// another Store in this process) holds the database file.
	ErrLocked = errors.New("database is locked")
)

// DefaultEventsPerPod is how many events of each pod are kept when
// Options.EventsPerPod is not set.
const DefaultEventsPerPod = 1000

// DefaultMaxEvents is how many events are kept in all when
// Options.MaxEvents is not set: the recorder's bound (events.DefaultTotal).
const DefaultMaxEvents = events.DefaultTotal

// lockTimeout is how long Open waits for the file lock before it gives up
// with ErrLocked.
const lockTimeout = time.Second

// schemaVersion is the layout of the buckets below. Open refuses a file
// written with another layout rather than misreading it, except the one
// before, which it upgrades (see upgrade).
const schemaVersion = "2"

// Buckets. The layout:
//
//	info        "schema" -> schemaVersion
//	            "events" -> big-endian count of the kept events
//	pods        uid -> JSON storedPod
//	checkpoints uid -> opaque blob
//	events      uid -> bucket: big-endian per-pod sequence -> JSON storedEvent
//	eventlog    big-endian store-wide sequence (storedEvent.Seq) -> uid and
//	            big-endian per-pod sequence: every kept event, oldest first
//	meta        key -> value
//	timelines   uid -> opaque blob: the pod's timeline (timelines.go)
//	configmaps  namespace/name -> JSON v1.ConfigMap (objects.go)
//	secrets     namespace/name -> JSON v1.Secret (objects.go)
//
// Every event bucket belongs to a stored pod, or to the node
// (events.IsNodeUID): an event is kept only while its pod is (AppendEvent,
// DeletePod), and Open drops what an older podward left behind. So does
// every timeline: a schema 2 file without the bucket gets it at Open.
var (
	bucketInfo        = []byte("info")
	bucketPods        = []byte("pods")
	bucketCheckpoints = []byte("checkpoints")
	bucketEvents      = []byte("events")
	bucketEventLog    = []byte("eventlog")
	bucketMeta        = []byte("meta")
	bucketTimelines   = []byte("timelines")

	keySchema     = []byte("schema")
	keyEventCount = []byte("events")
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// EventsPerPod is how many events are kept per pod: appending one more
	// drops the pod's oldest. Zero or less means DefaultEventsPerPod.
	EventsPerPod int
	// MaxEvents is how many events are kept in all: appending one more
	// drops the oldest of all pods. Zero or less means DefaultMaxEvents.
	MaxEvents int
	// DeferredDelay is how long a deferred write (AppendEvents,
	// PutTimelines, PutCheckpointDeferred) waits for a durable write to
	// share its commit with (commit.go). Zero or less means
	// DefaultDeferredDelay.
	DeferredDelay time.Duration
}

// Store is podward's durable state in one bbolt file. It is safe for
// concurrent use: reads run in parallel, and every write is committed (and
// fsynced) before the method returns. Concurrent writes share commits; the
// writes that guard nothing wait a little for one to share (commit.go).
type Store struct {
	db           *bolt.DB
	w            *committer
	path         string
	eventsPerPod int
	maxEvents    int
}

// Open opens the database at path, creating it (mode 0600, and an
// existing file is made 0600: it holds Secrets) and its parent
// directory (mode 0700) when missing. The file stays locked until Close.
//
// When another process, or another Store of this process, holds the file,
// Open gives up after about a second with an error that says "another
// podward agent holds <path>" and matches ErrLocked.
func Open(path string, opts Options) (*Store, error) {
	if opts.EventsPerPod <= 0 {
		opts.EventsPerPod = DefaultEventsPerPod
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	if opts.DeferredDelay <= 0 {
		opts.DeferredDelay = DefaultDeferredDelay
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// NoSync stays false: a commit is on disk when Update returns, which
	// checkpoints rely on.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store: another podward agent holds %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// An older podward's file may be readable by others: it holds Secrets.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, path: path, eventsPerPod: opts.EventsPerPod, maxEvents: opts.MaxEvents}
	if err := s.init(); err != nil {
		// The init error is the one worth reporting.
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.w = newCommitter(db, opts.DeferredDelay)
	return s, nil
}

// init creates the buckets of a new file, checks the schema of an old one
// (upgrading the one before), and drops the events no stored pod owns and
// those beyond Options.MaxEvents.
func (s *Store) init() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketInfo, bucketPods, bucketCheckpoints, bucketEvents, bucketEventLog, bucketMeta, bucketTimelines, bucketConfigMaps, bucketSecrets} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		info := tx.Bucket(bucketInfo)
		switch v := info.Get(keySchema); {
		case v == nil:
			if err := info.Put(keySchema, []byte(schemaVersion)); err != nil {
				return err
			}
		case string(v) == "1":
			if err := upgrade(tx); err != nil {
				return fmt.Errorf("upgrade schema 1 to %s: %w", schemaVersion, err)
			}
		case string(v) != schemaVersion:
			return fmt.Errorf("schema version %q, this podward reads %q", v, schemaVersion)
		}
		et := openEventTx(tx)
		if err := et.dropOrphans(tx.Bucket(bucketPods)); err != nil {
			return fmt.Errorf("drop the events of removed pods: %w", err)
		}
		if err := et.trimTotal(uint64(s.maxEvents)); err != nil {
			return fmt.Errorf("trim events: %w", err)
		}
		if err := dropOrphanTimelines(tx); err != nil {
			return fmt.Errorf("drop the timelines of removed pods: %w", err)
		}
		return et.save()
	})
}

// Close commits the writes queued (deferred ones too) and waits for the
// transactions in flight, then releases the file and its lock. Every call
// after Close fails.
func (s *Store) Close() error {
	s.w.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Size is the database's size in bytes, as its last committed transaction
// left it (the file may be larger: bbolt grows it ahead). It reads no page
// and takes no write lock.
func (s *Store) Size() (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store size: %w", err)
	}
	return n, nil
}

// GetMeta returns the value stored under key, or "" and nil when unset.
func (s *Store) GetMeta(key string) (string, error) {
	var value string
	err := s.db.View(func(tx *bolt.Tx) error {
		value = string(tx.Bucket(bucketMeta).Get([]byte(key)))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("get meta %q: %w", key, err)
	}
	return value, nil
}

// PutMeta stores value under key, replacing what was there. The key must not
// be empty.
func (s *Store) PutMeta(key, value string) error {
	if key == "" {
		return errors.New("put meta: empty key")
	}
	err := s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), []byte(value))
	})
	if err != nil {
		return fmt.Errorf("put meta %q: %w", key, err)
	}
	return nil
}

// DeleteMeta removes the value stored under key. Removing a key that is
// not stored is not an error.
func (s *Store) DeleteMeta(key string) error {
	err := s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Delete([]byte(key))
	})
	if err != nil {
		return fmt.Errorf("delete meta %q: %w", key, err)
	}
	return nil
}

// MetaKeys returns the stored meta keys that start with prefix, sorted.
func (s *Store) MetaKeys(prefix string) ([]string, error) {
	var keys []string
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketMeta).Cursor()
		p := []byte(prefix)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list meta keys %q: %w", prefix, err)
	}
	return keys, nil
}
