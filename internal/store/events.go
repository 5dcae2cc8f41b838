package store

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	bolt "go.etcd.io/bbolt"

	"github.com/podward/podward/internal/events"
)

// storedEvent is the on-disk form of an events.Event. Its own field names
// keep the file readable when events.Event changes. Seq is a store-wide
// insertion counter, so that events of different pods with the same time
// keep the order they were appended in.
type storedEvent struct {
	Seq       uint64    `json:"seq"`
	Kind      string    `json:"kind,omitempty"`
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	PodUID    types.UID `json:"podUID"`
	FieldPath string    `json:"fieldPath,omitempty"`
	Message   string    `json:"message"`
}

func (e storedEvent) event() events.Event {
	return events.Event{
		Kind:      e.Kind,
		Time:      e.Time,
		Type:      e.Type,
		Reason:    e.Reason,
		Namespace: e.Namespace,
		Pod:       e.Pod,
		PodUID:    e.PodUID,
		FieldPath: e.FieldPath,
		Message:   e.Message,
	}
}

// AppendEvent stores e as the newest event of the pod e.PodUID and, in the
// same transaction, drops that pod's oldest events beyond
// Options.EventsPerPod. The event must have a PodUID. It costs one
// transaction (one fsync'ed commit) and does not depend on how many events
// are stored.
func (s *Store) AppendEvent(e events.Event) error {
	if e.PodUID == "" {
		return fmt.Errorf("append event %s of pod %s/%s: empty pod UID", e.Reason, e.Namespace, e.Pod)
	}
	err := s.db.Update(func(tx *bolt.Tx) error { return s.appendEvent(tx, e) })
	if err != nil {
		return fmt.Errorf("append event %s of pod %s: %w", e.Reason, e.PodUID, err)
	}
	return nil
}

// appendEvent is AppendEvent's work inside tx.
func (s *Store) appendEvent(tx *bolt.Tx, e events.Event) error {
	root := tx.Bucket(bucketEvents)
	global, err := root.NextSequence()
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists([]byte(e.PodUID))
	if err != nil {
		return err
	}
	// Per-pod sequences have no gaps and events are only ever dropped
	// from the front, so the kept events are exactly the keys from the
	// first one to seq.
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	data, err := json.Marshal(storedEvent{
		Seq:       global,
		Kind:      e.Kind,
		Time:      e.Time,
		Type:      e.Type,
		Reason:    e.Reason,
		Namespace: e.Namespace,
		Pod:       e.Pod,
		PodUID:    e.PodUID,
		FieldPath: e.FieldPath,
		Message:   e.Message,
	})
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := b.Put(seqKey(seq), data); err != nil {
		return err
	}
	return trimEvents(b, seq, uint64(s.eventsPerPod))
}

// trimEvents deletes the events of b older than the newest keep, newest
// being the sequence just written. Usually that is one event, or none.
func trimEvents(b *bolt.Bucket, newest, keep uint64) error {
	if newest <= keep {
		return nil
	}
	oldestKept := newest - keep + 1
	c := b.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < oldestKept; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// ListEvents returns the kept events of the pod uid, oldest first; none (and
// no error) for a pod without events. The slice is owned by the caller.
func (s *Store) ListEvents(uid types.UID) ([]events.Event, error) {
	var list []events.Event
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents).Bucket([]byte(uid))
		if b == nil {
			return nil
		}
		stored, err := readEvents(b, nil)
		if err != nil {
			return err
		}
		list = make([]events.Event, len(stored))
		for i, se := range stored {
			list[i] = se.event()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list events of pod %s: %w", uid, err)
	}
	return list, nil
}

// ListAllEvents returns the kept events of every pod, ordered by time, and
// events of the same time in the order they were appended. The slice is
// owned by the caller.
func (s *Store) ListAllEvents() ([]events.Event, error) {
	var stored []storedEvent
	err := s.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketEvents)
		return root.ForEachBucket(func(uid []byte) error {
			var err error
			stored, err = readEvents(root.Bucket(uid), stored)
			if err != nil {
				return fmt.Errorf("pod %s: %w", uid, err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list all events: %w", err)
	}
	slices.SortFunc(stored, func(a, b storedEvent) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	list := make([]events.Event, len(stored))
	for i, se := range stored {
		list[i] = se.event()
	}
	return list, nil
}

// readEvents appends the events of one pod's bucket to dst, oldest first.
func readEvents(b *bolt.Bucket, dst []storedEvent) ([]storedEvent, error) {
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 || v == nil {
			return errors.New("corrupt event key")
		}
		var se storedEvent
		if err := json.Unmarshal(v, &se); err != nil {
			return fmt.Errorf("decode event %d: %w", binary.BigEndian.Uint64(k), err)
		}
		dst = append(dst, se)
		return nil
	})
	return dst, err
}

// seqKey is the big-endian form of seq, so that byte order is insertion
// order.
func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}
