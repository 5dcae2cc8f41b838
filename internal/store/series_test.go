package store

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
)

// seriesEvent is the LogDropped event of pod uid's container app, the
// count-th of a series that began at first, last at last.
func seriesEvent(uid string, first, last time.Time, count int32, msg string) events.Event {
	e := events.Event{
		Time: last, Type: events.Warning, Reason: string(events.LogDropped), Namespace: "default",
		Pod: "p-" + uid, PodUID: types.UID(uid), FieldPath: "spec.containers{app}", Message: msg,
	}
	if count > 1 {
		e.Count, e.FirstTime = count, first
	}
	return e
}

// TestEventSeriesUpdatedInPlace: a repeat of an event of a series replaces
// the stored event of its series, keeping its place among the pod's
// events (in one batch too, and across a reopen); one whose series was
// trimmed away is stored anew.
func TestEventSeriesUpdatedInPlace(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, path := openTest(t, Options{EventsPerPod: 3})
	storePods(t, s, "p")
	if err := s.AppendEvent(seriesEvent("p", t0, t0, 1, "10 bytes")); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(event("p", t0.Add(time.Second), "between")); err != nil {
		t.Fatal(err)
	}
	batch := []events.Event{
		seriesEvent("p", t0, t0.Add(2*time.Second), 2, "20 bytes"),
		seriesEvent("p", t0, t0.Add(3*time.Second), 3, "30 bytes"),
	}
	if err := s.AppendEvents(batch); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		got, err := s.ListEvents("p")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != batch[1] || got[1].Message != "between" {
			t.Errorf("%s: stored %+v, want the series (count 3, from t0 to t0+3s) then the other event", when, got)
		}
	}
	check(s, "after the repeats")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{EventsPerPod: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	check(s, "after a reopen")
	all, err := s.ListAllEvents()
	if err != nil || len(all) != 2 {
		t.Fatalf("ListAllEvents: %d events, %v; want 2", len(all), err)
	}

	// The series pushed out by newer events: its repeat is stored anew.
	for i := range 3 {
		if err := s.AppendEvent(event("p", t0.Add(time.Duration(4+i)*time.Second), "newer")); err != nil {
			t.Fatal(err)
		}
	}
	late := seriesEvent("p", t0, t0.Add(10*time.Second), 4, "40 bytes")
	if err := s.AppendEvent(late); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListEvents("p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2] != late {
		t.Errorf("a repeat of a trimmed series: %+v, want it stored as the newest", got)
	}
}
