package store

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	bolt "go.etcd.io/bbolt"
)

// PutCheckpoint stores data as the checkpoint of the pod uid, replacing the
// previous one. The checkpoint is on disk when PutCheckpoint returns, so a
// caller may write it ahead of the action it guards. The Store keeps no
// reference to data.
func (s *Store) PutCheckpoint(uid types.UID, data []byte) error {
	if uid == "" {
		return errors.New("put checkpoint: empty pod UID")
	}
	err := s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCheckpoints).Put([]byte(uid), data)
	})
	if err != nil {
		return fmt.Errorf("put checkpoint of pod %s: %w", uid, err)
	}
	return nil
}

// PutCheckpointDeferred is PutCheckpoint for a checkpoint that guards
// nothing yet: it returns at once, and the checkpoint is committed with the
// next durable write (a DeletePod of the pod, say: one commit for both) or
// after Options.DeferredDelay. wait returns once it is on disk, with
// PutCheckpoint's error; a caller that needs the checkpoint durable before
// an action calls wait first. Writes are committed in the order they were
// made, so a later write of the pod (a DeletePod, another checkpoint)
// supersedes this one.
func (s *Store) PutCheckpointDeferred(uid types.UID, data []byte) (wait func() error) {
	if uid == "" {
		return func() error { return errors.New("put checkpoint: empty pod UID") }
	}
	data = append([]byte{}, data...)
	w := s.w.write(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCheckpoints).Put([]byte(uid), data)
	}, true)
	return func() error {
		if err := w(); err != nil {
			return fmt.Errorf("put checkpoint of pod %s: %w", uid, err)
		}
		return nil
	}
}

// GetCheckpoint returns a copy of the checkpoint of the pod uid, or an error
// matching ErrNotFound when there is none.
func (s *Store) GetCheckpoint(uid types.UID) ([]byte, error) {
	key := []byte(uid)
	var data []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		// A cursor tells "stored empty" from "not stored", which a nil
		// from Get does not.
		k, v := tx.Bucket(bucketCheckpoints).Cursor().Seek(key)
		if k == nil || !bytes.Equal(k, key) {
			return ErrNotFound
		}
		data = append([]byte{}, v...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get checkpoint of pod %s: %w", uid, err)
	}
	return data, nil
}
