package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
)

// What removed pods leave behind (issue 12, item 3): nothing, and the
// events are bounded in total as well as per pod.

// keyCounts counts the keys of every bucket of the store's file, nested
// buckets' keys under "events/*" and their number under "events/buckets".
func keyCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	counts := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v != nil {
					counts[string(name)]++
					return nil
				}
				counts[string(name)+"/buckets"]++
				return b.Bucket(k).ForEach(func(_, _ []byte) error {
					counts[string(name)+"/*"]++
					return nil
				})
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestChurnLeavesNoKeys: pods stored, checkpointed, with events and meta
// values, then deleted, leave the store with the keys it had before.
func TestChurnLeavesNoKeys(t *testing.T) {
	s, _ := openTest(t, Options{EventsPerPod: 5, MaxEvents: 50})
	storePods(t, s, "long-lived")
	if err := s.AppendEvent(event("long-lived", time.Unix(0, 0), "first")); err != nil {
		t.Fatal(err)
	}
	base := keyCounts(t, s)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 40 {
		uid := types.UID(fmt.Sprint("churn-", i))
		storePods(t, s, uid)
		if err := s.PutCheckpoint(uid, []byte("cp")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutMeta("replacement/"+string(uid), "next"); err != nil {
			t.Fatal(err)
		}
		for j := range 8 { // over the bound per pod
			if err := s.AppendEvent(event(uid, t0, fmt.Sprint(j))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteMeta("replacement/" + string(uid)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeletePod(uid); err != nil {
			t.Fatal(err)
		}
		// Late: the pod's events come in after its removal.
		if err := s.AppendEvent(event(uid, t0, "late")); err == nil {
			t.Fatalf("an event of the removed pod %s was kept", uid)
		}
	}
	if got := keyCounts(t, s); !maps(got, base) {
		t.Errorf("keys per bucket after the churn %v, before %v", got, base)
	}
	if evs, _ := s.ListAllEvents(); len(evs) != 1 || evs[0].Message != "first" {
		t.Errorf("events after the churn %+v, want the long-lived pod's one", evs)
	}
}

func maps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestEventsBoundedInTotal: beyond MaxEvents, the oldest event of all goes
// first, whichever pod it belongs to; each pod keeps its own bound too; a
// smaller bound applies from the next Open.
func TestEventsBoundedInTotal(t *testing.T) {
	s, path := openTest(t, Options{EventsPerPod: 4, MaxEvents: 6})
	storePods(t, s, "a", "b", "c")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Times run backwards: the order is the order of appending.
	seq := 0
	appendAll := func(uid types.UID, n int) {
		t.Helper()
		for range n {
			seq++
			if err := s.AppendEvent(event(uid, t0.Add(-time.Duration(seq)*time.Second), fmt.Sprint(uid, seq))); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAll("a", 3) // a1 a2 a3
	appendAll("b", 2) // b4 b5
	appendAll("a", 3) // a6 a7 a8: a keeps its newest 4, a3 a6 a7 a8
	appendAll("c", 1) // c9: 7 in all, the oldest of all (a3) goes
	want := map[types.UID]string{"a": "a6 a7 a8", "b": "b4 b5", "c": "c9"}
	check := func(s *Store) {
		t.Helper()
		for uid, w := range want {
			evs, err := s.ListEvents(uid)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.Message)
			}
			if strings.Join(got, " ") != w {
				t.Errorf("pod %s keeps %v, want %s", uid, got, w)
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{EventsPerPod: 4, MaxEvents: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want = map[types.UID]string{"a": "a7 a8", "b": "", "c": "c9"}
	check(s)
	// The count the store keeps agrees with what it has.
	if c := keyCounts(t, s); c["eventlog"] != 3 || c["events/*"] != 3 {
		t.Errorf("keys per bucket %v, want 3 events, logged", c)
	}
}

// TestOpenUpgradesAndDropsEventsOfRemovedPods: a file of the schema before
// (no event log) with the events an older podward stored after its pods'
// removal — which recreated their buckets — opens with those events gone,
// the node's and the stored pods' kept, and the bounds in force.
func TestOpenUpgradesAndDropsEventsOfRemovedPods(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podward.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketInfo, bucketPods, bucketCheckpoints, bucketEvents, bucketMeta} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketInfo).Put(keySchema, []byte("1")); err != nil {
			return err
		}
		if err := tx.Bucket(bucketPods).Put([]byte("kept"), []byte(`{"pod":{"metadata":{"uid":"kept","name":"kept"}}}`)); err != nil {
			return err
		}
		root := tx.Bucket(bucketEvents)
		for i, uid := range []types.UID{"kept", "gone-1", events.NodeUID("n"), "gone-2", "kept"} {
			global, _ := root.NextSequence()
			b, err := root.CreateBucketIfNotExists([]byte(uid))
			if err != nil {
				return err
			}
			seq, _ := b.NextSequence()
			e := event(uid, t0.Add(time.Duration(i)*time.Second), fmt.Sprint(uid, "-", i))
			data, _ := json.Marshal(storedEvent{Seq: global, Time: e.Time, Type: e.Type, Reason: e.Reason, Namespace: e.Namespace, Pod: e.Pod, PodUID: uid, Message: e.Message})
			if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path, Options{MaxEvents: 2})
	if err != nil {
		t.Fatalf("Open of a schema 1 file: %v", err)
	}
	defer s.Close()
	all, err := s.ListAllEvents()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.Message)
	}
	// kept-0 is the oldest of the three kept: MaxEvents 2 drops it.
	if want := []string{"node:n-2", "kept-4"}; !slices.Equal(got, want) {
		t.Errorf("events after Open %v, want %v", got, want)
	}
	c := keyCounts(t, s)
	if c["events/buckets"] != 2 || c["eventlog"] != 2 {
		t.Errorf("keys per bucket %v, want the buckets of kept and the node, 2 events logged", c)
	}
	// Appending goes on within the bounds.
	if err := s.AppendEvent(event("kept", t0.Add(time.Minute), "new")); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.ListEvents("kept"); len(evs) != 2 || evs[1].Message != "new" {
		t.Errorf("events of kept %+v, want kept-4 and new", evs)
	}
	if evs, _ := s.ListEvents(events.NodeUID("n")); len(evs) != 0 {
		t.Errorf("the node's event, the oldest, was kept beyond MaxEvents: %+v", evs)
	}
}

func TestDeleteMetaAndMetaKeys(t *testing.T) {
	s, _ := openTest(t, Options{})
	for _, k := range []string{"bootID", "replacement/b", "replacement/a", "replacementX"} {
		if err := s.PutMeta(k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.MetaKeys("replacement/")
	if err != nil || !slices.Equal(keys, []string{"replacement/a", "replacement/b"}) {
		t.Fatalf("MetaKeys = %v, %v", keys, err)
	}
	for _, k := range []string{"replacement/a", "replacement/a", "never"} {
		if err := s.DeleteMeta(k); err != nil {
			t.Errorf("DeleteMeta(%q) = %v", k, err)
		}
	}
	if keys, _ := s.MetaKeys(""); !slices.Equal(keys, []string{"bootID", "replacement/b", "replacementX"}) {
		t.Errorf("meta keys after delete %v", keys)
	}
}

// TestTimelinesGoWithTheirPod keeps a pod's timeline only while the pod
// is stored: DeletePod takes it along, a late save of it is not kept, and
// Open drops one an older podward left behind.
func TestTimelinesGoWithTheirPod(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []types.UID{"kept", "gone"} {
		if err := s.PutPod(decodedPod(t, string(uid))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutTimelines(map[types.UID][]byte{"kept": []byte("k1"), "gone": []byte("g1"), "never": []byte("n1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePod("gone"); err != nil {
		t.Fatal(err)
	}
	want := map[types.UID][]byte{"kept": []byte("k1")}
	if got, err := s.ListTimelines(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after DeletePod: timelines %q (%v), want %q", got, err, want)
	}
	if err := s.PutTimelines(map[types.UID][]byte{"gone": []byte("g2")}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ListTimelines(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a late save: timelines %q (%v), want %q", got, err, want)
	}
	// An orphan written behind the store's back, as an older podward
	// that did not know timelines would leave it.
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTimelines).Put([]byte("orphan"), []byte("o")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, _ := s.ListTimelines(); len(got) != 1 || got["kept"] == nil {
		t.Errorf("after Open: %q", got)
	}
}
