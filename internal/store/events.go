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
	// Count and FirstTime are an event series' (events.Event's).
	Count     int32     `json:"count,omitempty"`
	FirstTime time.Time `json:"firstTime,omitzero"`
}

// sameSeries says whether the stored event is the one of e's series.
func (se storedEvent) sameSeries(e events.Event) bool {
	first := se.FirstTime
	if first.IsZero() {
		first = se.Time
	}
	return se.Kind == e.Kind && se.Type == e.Type && se.Reason == e.Reason && se.FieldPath == e.FieldPath &&
		se.PodUID == e.PodUID && first.Equal(e.First())
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
		Count:     e.Count,
		FirstTime: e.FirstTime,
	}
}

// AppendEvent stores e as the newest event of the pod e.PodUID and, in the
// same transaction, drops that pod's oldest events beyond
// Options.EventsPerPod and the oldest events of all beyond
// Options.MaxEvents. The event must have a PodUID, of a pod the store has
// (or of the node, events.NodeUID): the event of a pod that is not stored —
// removed meanwhile, since events are stored behind the pod's workers — is
// not kept, and the error matches ErrNotFound. It costs one transaction
// (one fsync'ed commit) and does not depend on how many events are stored.
func (s *Store) AppendEvent(e events.Event) error {
	if e.PodUID == "" {
		return fmt.Errorf("append event %s of pod %s/%s: empty pod UID", e.Reason, e.Namespace, e.Pod)
	}
	err := s.w.update(func(tx *bolt.Tx) error {
		if !events.IsNodeUID(e.PodUID) && tx.Bucket(bucketPods).Get([]byte(e.PodUID)) == nil {
			return fmt.Errorf("pod not stored: %w", ErrNotFound)
		}
		et := openEventTx(tx)
		if err := s.appendEvent(et, e); err != nil {
			return err
		}
		return et.save()
	})
	if err != nil {
		return fmt.Errorf("append event %s of pod %s: %w", e.Reason, e.PodUID, err)
	}
	return nil
}

// AppendEvents stores evs, oldest first, as AppendEvent would one by one,
// but in one transaction: one fsync'ed commit for a batch, so that a burst
// of events (a pod's start records several) does not queue as many commits
// on the disk ahead of the pod workers' checkpoints. An event of a pod the
// store does not have is dropped, as AppendEvent drops it, without failing
// the others; so is one without a PodUID, which the error names. On a
// store error none of the batch is kept. It is a deferred write (events
// guard nothing): it may wait up to Options.DeferredDelay for a commit
// shared with other writes.
func (s *Store) AppendEvents(evs []events.Event) error {
	var bad []error
	err := s.w.write(func(tx *bolt.Tx) error {
		bad = nil // a write may run again, in a new transaction
		et := openEventTx(tx)
		pods := tx.Bucket(bucketPods)
		for _, e := range evs {
			if e.PodUID == "" {
				bad = append(bad, fmt.Errorf("append event %s of pod %s/%s: empty pod UID", e.Reason, e.Namespace, e.Pod))
				continue
			}
			if !events.IsNodeUID(e.PodUID) && pods.Get([]byte(e.PodUID)) == nil {
				continue
			}
			if err := s.appendEvent(et, e); err != nil {
				return fmt.Errorf("append event %s of pod %s: %w", e.Reason, e.PodUID, err)
			}
		}
		return et.save()
	}, true)()
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return errors.Join(bad...)
}

// appendEvent is AppendEvent's work inside et's transaction. A repeat of
// an event of a series (its Count above 1) replaces the stored event of
// its series in place, when it is still stored.
func (s *Store) appendEvent(et *eventTx, e events.Event) error {
	if e.Count > 1 {
		if done, err := s.updateSeries(et, e); done || err != nil {
			return err
		}
	}
	global, err := et.root.NextSequence()
	if err != nil {
		return err
	}
	b, err := et.root.CreateBucketIfNotExists([]byte(e.PodUID))
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
		Count:     e.Count,
		FirstTime: e.FirstTime,
	})
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := et.put(b, []byte(e.PodUID), seq, global, data); err != nil {
		return err
	}
	if err := et.trimPod(b, seq, uint64(s.eventsPerPod)); err != nil {
		return err
	}
	return et.trimTotal(uint64(s.maxEvents))
}

// updateSeries rewrites the stored event of e's series, newest first
// among at most eventsPerPod of its pod, with e's count, time and message,
// keeping its place (its keys). done is false when the series has no
// stored event (it was trimmed, or stored before its pod).
func (s *Store) updateSeries(et *eventTx, e events.Event) (done bool, err error) {
	b := et.root.Bucket([]byte(e.PodUID))
	if b == nil {
		return false, nil
	}
	c := b.Cursor()
	n := 0
	for k, v := c.Last(); k != nil && n < s.eventsPerPod; k, v = c.Prev() {
		n++
		var se storedEvent
		if json.Unmarshal(v, &se) != nil || !se.sameSeries(e) {
			continue
		}
		se.Time, se.Message, se.Count, se.FirstTime = e.Time, e.Message, e.Count, e.First()
		data, err := json.Marshal(se)
		if err != nil {
			return false, fmt.Errorf("encode: %w", err)
		}
		return true, b.Put(append([]byte{}, k...), data)
	}
	return false, nil
}

// eventTx keeps the events' buckets consistent within one write
// transaction: each pod's bucket, the store-wide log of every kept event
// (oldest first), and their count. save writes the count back.
type eventTx struct {
	root  *bolt.Bucket // events: one bucket per pod
	log   *bolt.Bucket // eventlog
	info  *bolt.Bucket
	count uint64
}

func openEventTx(tx *bolt.Tx) *eventTx {
	et := &eventTx{root: tx.Bucket(bucketEvents), log: tx.Bucket(bucketEventLog), info: tx.Bucket(bucketInfo)}
	if v := et.info.Get(keyEventCount); len(v) == 8 {
		et.count = binary.BigEndian.Uint64(v)
	}
	return et
}

func (et *eventTx) save() error { return et.info.Put(keyEventCount, seqKey(et.count)) }

// put stores data as the event seq of the pod uid (bucket b), the store's
// event global.
func (et *eventTx) put(b *bolt.Bucket, uid []byte, seq, global uint64, data []byte) error {
	if err := b.Put(seqKey(seq), data); err != nil {
		return err
	}
	if err := et.log.Put(seqKey(global), append(append([]byte{}, uid...), seqKey(seq)...)); err != nil {
		return err
	}
	et.count++
	return nil
}

// forget drops the log entry of a stored event (its value) being deleted
// from its pod's bucket. An event that does not decode has its entry left:
// trimTotal drops such an entry when it reaches it.
func (et *eventTx) forget(v []byte) error {
	et.count = max(et.count, 1) - 1
	var se struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(v, &se) != nil {
		return nil
	}
	return et.log.Delete(seqKey(se.Seq))
}

// trimPod deletes the events of b older than the newest keep, newest being
// the sequence just written. Usually that is one event, or none.
func (et *eventTx) trimPod(b *bolt.Bucket, newest, keep uint64) error {
	if newest <= keep {
		return nil
	}
	oldestKept := newest - keep + 1
	c := b.Cursor()
	for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) < oldestKept; k, v = c.First() {
		if err := et.forget(v); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// trimTotal deletes the oldest events of all pods while more than keep are
// kept. Usually that is one event, or none.
func (et *eventTx) trimTotal(keep uint64) error {
	c := et.log.Cursor()
	for k, v := c.First(); k != nil && et.count > keep; k, v = c.First() {
		if len(v) > 8 {
			uid, seq := v[:len(v)-8], v[len(v)-8:]
			if b := et.root.Bucket(uid); b != nil && b.Get(seq) != nil {
				if err := b.Delete(seq); err != nil {
					return err
				}
				et.count--
			}
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// dropPod deletes every event of the pod uid and its bucket; a pod without
// events is not an error.
func (et *eventTx) dropPod(uid []byte) error {
	b := et.root.Bucket(uid)
	if b == nil {
		return nil
	}
	if err := b.ForEach(func(_, v []byte) error { return et.forget(v) }); err != nil {
		return err
	}
	return et.root.DeleteBucket(uid)
}

// dropOrphans deletes the events of the pods that pods does not have, but
// the node's: what an older podward stored after a pod's removal.
func (et *eventTx) dropOrphans(pods *bolt.Bucket) error {
	var orphans [][]byte
	err := et.root.ForEachBucket(func(uid []byte) error {
		if !events.IsNodeUID(types.UID(uid)) && pods.Get(uid) == nil {
			orphans = append(orphans, append([]byte{}, uid...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, uid := range orphans {
		if err := et.dropPod(uid); err != nil {
			return fmt.Errorf("pod %s: %w", uid, err)
		}
	}
	return nil
}

// upgrade turns a schema 1 file into this schema: it logs every kept event
// in the store-wide order its Seq gives, and counts them.
func upgrade(tx *bolt.Tx) error {
	root, log := tx.Bucket(bucketEvents), tx.Bucket(bucketEventLog)
	var count uint64
	err := root.ForEachBucket(func(uid []byte) error {
		return root.Bucket(uid).ForEach(func(k, v []byte) error {
			var se storedEvent
			if len(k) != 8 || v == nil {
				return fmt.Errorf("pod %s: corrupt event key", uid)
			}
			if err := json.Unmarshal(v, &se); err != nil {
				return fmt.Errorf("pod %s: decode event %d: %w", uid, binary.BigEndian.Uint64(k), err)
			}
			count++
			return log.Put(seqKey(se.Seq), append(append([]byte{}, uid...), k...))
		})
	})
	if err != nil {
		return err
	}
	info := tx.Bucket(bucketInfo)
	if err := info.Put(keyEventCount, seqKey(count)); err != nil {
		return err
	}
	return info.Put(keySchema, []byte(schemaVersion))
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
