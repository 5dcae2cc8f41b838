package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	bolt "go.etcd.io/bbolt"

	"github.com/podward/podward/internal/model"
)

// storedPod is the on-disk form of a model.Pod. Defer is stored beside the
// pod rather than decoded again from its annotation, so that reading a pod
// back never depends on (or re-runs) manifest decoding.
type storedPod struct {
	Pod   *v1.Pod        `json:"pod"`
	Defer []v1.Container `json:"defer,omitempty"`
}

// PutPod stores p under its UID, replacing any pod stored there. The pod must
// have a UID. The Store keeps no reference to p.
func (s *Store) PutPod(p *model.Pod) error {
	if p == nil || p.Pod == nil {
		return errors.New("put pod: nil pod")
	}
	if p.UID == "" {
		return fmt.Errorf("put pod %s: no UID", p.Key())
	}
	data, err := json.Marshal(storedPod{Pod: p.Pod, Defer: p.Defer})
	if err != nil {
		return fmt.Errorf("put pod %s: encode: %w", p.Key(), err)
	}
	err = s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPods).Put([]byte(p.UID), data)
	})
	if err != nil {
		return fmt.Errorf("put pod %s: %w", p.Key(), err)
	}
	return nil
}

// GetPod returns the pod stored under uid, or an error matching ErrNotFound.
// The returned pod is new and owned by the caller.
func (s *Store) GetPod(uid types.UID) (*model.Pod, error) {
	var p *model.Pod
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketPods).Get([]byte(uid))
		if data == nil {
			return ErrNotFound
		}
		var err error
		p, err = decodePod(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get pod %s: %w", uid, err)
	}
	return p, nil
}

// ListPods returns every stored pod, ordered by creation timestamp, then
// namespace/name, then UID. The pods are new and owned by the caller.
func (s *Store) ListPods() ([]*model.Pod, error) {
	var pods []*model.Pod
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPods).ForEach(func(uid, data []byte) error {
			p, err := decodePod(data)
			if err != nil {
				return fmt.Errorf("pod %s: %w", uid, err)
			}
			pods = append(pods, p)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	slices.SortFunc(pods, func(a, b *model.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.UID, b.UID),
		)
	})
	return pods, nil
}

// DeletePod removes the pod stored under uid together with its checkpoint,
// its events and its timeline, in one transaction: either all of them go or none does.
// From then on the pod's events are not kept (AppendEvent). Deleting a pod
// that is not stored is not an error.
func (s *Store) DeletePod(uid types.UID) error {
	key := []byte(uid)
	err := s.w.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketPods).Delete(key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketCheckpoints).Delete(key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTimelines).Delete(key); err != nil {
			return err
		}
		et := openEventTx(tx)
		if err := et.dropPod(key); err != nil {
			return err
		}
		return et.save()
	})
	if err != nil {
		return fmt.Errorf("delete pod %s: %w", uid, err)
	}
	return nil
}

func decodePod(data []byte) (*model.Pod, error) {
	var sp storedPod
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if sp.Pod == nil {
		return nil, errors.New("decode: no pod in record")
	}
	return &model.Pod{Pod: sp.Pod, Defer: sp.Defer}, nil
}
