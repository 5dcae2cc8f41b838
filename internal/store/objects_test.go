package store

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestObjectsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &v1.ConfigMap{Data: map[string]string{"a": "1"}}
	cm.Namespace, cm.Name = "default", "cfg"
	sec := &v1.Secret{Data: map[string][]byte{"k": []byte("v")}}
	sec.Namespace, sec.Name = "ns", "sec"
	gone := sec.DeepCopy()
	gone.Name = "gone"
	for _, err := range []error{s.PutConfigMap(cm), s.PutSecret(sec), s.PutSecret(gone), s.DeleteSecret("ns", "gone"), s.DeleteConfigMap("ns", "none")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cms, err := s.ListConfigMaps()
	if err != nil || len(cms) != 1 || cms[0].Data["a"] != "1" {
		t.Fatalf("ListConfigMaps = %v, %v", cms, err)
	}
	secs, err := s.ListSecrets()
	if err != nil || len(secs) != 1 || string(secs[0].Data["k"]) != "v" || secs[0].Namespace != "ns" {
		t.Fatalf("ListSecrets = %v, %v", secs, err)
	}
}

func TestOpenMakesTheFileRootOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
}
