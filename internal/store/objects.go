package store

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	bolt "go.etcd.io/bbolt"
)

// The ConfigMaps and Secrets applied to a standalone agent
// (internal/objects/local), each as its JSON under "namespace/name". The
// file is 0600, so a Secret's bytes are readable by root only.
var (
	bucketConfigMaps = []byte("configmaps")
	bucketSecrets    = []byte("secrets")
)

func objectKey(ns, name string) []byte { return []byte(ns + "/" + name) }

// PutConfigMap stores cm under its namespace and name, replacing what was
// there. The Store keeps no reference to cm.
func (s *Store) PutConfigMap(cm *v1.ConfigMap) error {
	return s.putObject(bucketConfigMaps, "configmap", cm.Namespace, cm.Name, cm)
}

// PutSecret stores sec under its namespace and name, replacing what was
// there. The Store keeps no reference to sec.
func (s *Store) PutSecret(sec *v1.Secret) error {
	return s.putObject(bucketSecrets, "secret", sec.Namespace, sec.Name, sec)
}

// DeleteConfigMap removes the ConfigMap ns/name; one not stored is not an
// error.
func (s *Store) DeleteConfigMap(ns, name string) error {
	return s.deleteObject(bucketConfigMaps, "configmap", ns, name)
}

// DeleteSecret removes the Secret ns/name; one not stored is not an error.
func (s *Store) DeleteSecret(ns, name string) error {
	return s.deleteObject(bucketSecrets, "secret", ns, name)
}

// ListConfigMaps returns every stored ConfigMap, by namespace and name.
// They are new and owned by the caller.
func (s *Store) ListConfigMaps() ([]*v1.ConfigMap, error) {
	var out []*v1.ConfigMap
	err := s.forEachObject(bucketConfigMaps, func(data []byte) error {
		cm := &v1.ConfigMap{}
		out = append(out, cm)
		return json.Unmarshal(data, cm)
	})
	if err != nil {
		return nil, fmt.Errorf("list configmaps: %w", err)
	}
	return out, nil
}

// ListSecrets returns every stored Secret, by namespace and name. They are
// new and owned by the caller.
func (s *Store) ListSecrets() ([]*v1.Secret, error) {
	var out []*v1.Secret
	err := s.forEachObject(bucketSecrets, func(data []byte) error {
		sec := &v1.Secret{}
		out = append(out, sec)
		return json.Unmarshal(data, sec)
	})
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

func (s *Store) putObject(bucket []byte, what, ns, name string, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("put %s %s/%s: encode: %w", what, ns, name, err)
	}
	err = s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put(objectKey(ns, name), data)
	})
	if err != nil {
		return fmt.Errorf("put %s %s/%s: %w", what, ns, name, err)
	}
	return nil
}

func (s *Store) deleteObject(bucket []byte, what, ns, name string) error {
	err := s.w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Delete(objectKey(ns, name))
	})
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", what, ns, name, err)
	}
	return nil
}

func (s *Store) forEachObject(bucket []byte, fn func(data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, data []byte) error {
			if err := fn(data); err != nil {
				return fmt.Errorf("%s: decode: %w", k, err)
			}
			return nil
		})
	})
}
