package events

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestRecorderCountsASeries: repeats of a LogDropped event about one
// container are counted in one event (its count, last time and last
// message; its first time kept), which the watchers get as it changes;
// other containers, other reasons and a repeat after SeriesWindow are
// events of their own.
func TestRecorderCountsASeries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	clk := clocktesting.NewFakePassiveClock(t0)
	r := NewRecorder(clk, 10)
	w := r.Watch()
	defer w.Stop()
	p := testPod("a")
	const app, side = "spec.containers{app}", "spec.containers{side}"
	record := func(step time.Duration, fieldPath string, reason Reason, msg string) {
		clk.SetTime(clk.Now().Add(step))
		r.Eventf(p, fieldPath, Warning, reason, "%s", msg)
	}
	record(0, app, LogDropped, "10 bytes")
	record(time.Second, side, LogDropped, "1 byte")
	record(time.Second, app, "Unhealthy", "probe failed")
	record(time.Second, app, LogDropped, "20 bytes")
	record(time.Second, app, LogDropped, "30 bytes")
	record(time.Second, app, "Unhealthy", "probe failed") // not a series reason: kept again

	got := r.List(p.UID)
	if len(got) != 4 {
		t.Fatalf("kept %d events, want 4: %+v", len(got), got)
	}
	series := got[0]
	if series.Reason != string(LogDropped) || series.FieldPath != app || series.Count != 3 ||
		!series.First().Equal(t0) || !series.Time.Equal(t0.Add(4*time.Second)) || series.Message != "30 bytes" {
		t.Errorf("the series %+v: want 3 from %v to %v, the last message", series, t0, t0.Add(4*time.Second))
	}
	if got[1].FieldPath != side || got[1].Occurrences() != 1 || !got[1].First().Equal(got[1].Time) {
		t.Errorf("another container's %+v: want an event of its own", got[1])
	}
	if want := "12:00:04 Warning LogDropped spec.containers{app} 30 bytes (x3)"; series.Line() != want {
		t.Errorf("Line() = %q, want %q", series.Line(), want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var counts []int32
	for range 6 {
		e, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Reason == string(LogDropped) && e.FieldPath == app {
			counts = append(counts, e.Occurrences())
		}
	}
	if len(counts) != 3 || counts[0] != 1 || counts[1] != 2 || counts[2] != 3 {
		t.Errorf("the watcher saw the series with counts %v, want 1 2 3", counts)
	}

	// Past the window, a repeat begins a series of its own.
	record(SeriesWindow+time.Second, app, LogDropped, "40 bytes")
	if got := r.List(p.UID); len(got) != 5 || got[4].Occurrences() != 1 || got[4].Message != "40 bytes" {
		t.Errorf("a repeat past the window: %+v", got)
	}
}

// TestRecorderSeriesIsBounded: however often an event of a series repeats,
// it takes one kept event, and the pod's other events stay.
func TestRecorderSeriesIsBounded(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := NewRecorderWithLimits(clk, Limits{PerPod: 5, Total: 5})
	p := testPod("a")
	r.Eventf(p, "", Normal, Scheduled, "scheduled")
	for range 10000 {
		clk.SetTime(clk.Now().Add(time.Second))
		r.Eventf(p, "spec.containers{app}", Warning, LogDropped, "dropped")
	}
	got := r.All()
	if len(got) != 2 || got[0].Reason != string(Scheduled) || got[1].Count != 10000 {
		t.Errorf("kept %+v, want the Scheduled event and one LogDropped of count 10000", got)
	}
}
