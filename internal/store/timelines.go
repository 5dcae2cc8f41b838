package store

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	bolt "go.etcd.io/bbolt"
)

// PutTimelines stores, in one transaction, the timeline of each pod of
// data (an opaque blob per pod UID, which replaces the one before; nil
// deletes it). The timeline of a pod the store does not have — removed
// meanwhile, since timelines are saved behind the pod workers — is not
// kept, as its events are not: nothing would ever remove it. The Store
// keeps no reference to data. It is a deferred write: it may wait up to
// Options.DeferredDelay for a commit shared with other writes.
func (s *Store) PutTimelines(data map[types.UID][]byte) error {
	if len(data) == 0 {
		return nil
	}
	err := s.w.write(func(tx *bolt.Tx) error {
		pods, b := tx.Bucket(bucketPods), tx.Bucket(bucketTimelines)
		for uid, blob := range data {
			key := []byte(uid)
			var err error
			if blob == nil || pods.Get(key) == nil {
				err = b.Delete(key)
			} else {
				err = b.Put(key, blob)
			}
			if err != nil {
				return fmt.Errorf("pod %s: %w", uid, err)
			}
		}
		return nil
	}, true)()
	if err != nil {
		return fmt.Errorf("put timelines: %w", err)
	}
	return nil
}

// ListTimelines returns a copy of every stored timeline, by pod UID.
func (s *Store) ListTimelines() (map[types.UID][]byte, error) {
	out := map[types.UID][]byte{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTimelines).ForEach(func(k, v []byte) error {
			out[types.UID(k)] = append([]byte{}, v...)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list timelines: %w", err)
	}
	return out, nil
}

// dropOrphanTimelines deletes the timelines of the pods that pods does
// not have: what an older podward left after a pod's removal.
func dropOrphanTimelines(tx *bolt.Tx) error {
	pods, b := tx.Bucket(bucketPods), tx.Bucket(bucketTimelines)
	var orphans [][]byte
	if err := b.ForEach(func(k, _ []byte) error {
		if pods.Get(k) == nil {
			orphans = append(orphans, append([]byte{}, k...))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range orphans {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
