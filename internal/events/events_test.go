package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
)

func testPod(uid string) *model.Pod {
	return &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID("uid-" + uid)}}}
}

func TestRecorderKeepsNewestPerPod(t *testing.T) {
	r := NewRecorder(clocktesting.NewFakePassiveClock(time.Unix(0, 0)), 3)
	a, b := testPod("a"), testPod("b")
	for i := 0; i < 5; i++ {
		r.Eventf(a, "", Normal, "R", "a%d", i)
	}
	r.Eventf(b, "spec.containers{x}", Warning, "R", "b0")
	got := r.List(a.UID)
	if len(got) != 3 || got[0].Message != "a2" || got[2].Message != "a4" {
		t.Fatalf("kept %+v, want a2..a4", got)
	}
	if bs := r.List(b.UID); len(bs) != 1 || bs[0].FieldPath != "spec.containers{x}" {
		t.Fatalf("pod b events = %+v", bs)
	}
	r.Forget(a.UID)
	if len(r.List(a.UID)) != 0 {
		t.Fatal("Forget kept events")
	}
}

func TestWatcherGetsEventsInOrderWithoutBlockingTheRecorder(t *testing.T) {
	r := NewRecorder(clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 1, 0, time.Local)), 10)
	w := r.Watch()
	defer w.Stop()
	p := testPod("a")
	for i := 0; i < 100; i++ { // far more than any channel buffer: must not block
		r.Eventf(p, "spec.containers{app}", Normal, "Started", "Started container app")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		e, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if i == 0 {
			if want := "12:00:01 Normal Started spec.containers{app} Started container app"; e.Line() != want {
				t.Fatalf("Line() = %q, want %q", e.Line(), want)
			}
		}
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := w.Next(short); err == nil {
		t.Fatal("Next on an empty queue with a done context returned no error")
	}
}

// TestWatcherNextBatch: NextBatch takes every queued event at once, in
// order, and then waits for the next one.
func TestWatcherNextBatch(t *testing.T) {
	r := NewRecorder(clocktesting.NewFakePassiveClock(time.Unix(0, 0)), 10)
	w := r.Watch()
	defer w.Stop()
	p := testPod("a")
	for i := range 3 {
		r.Eventf(p, "", Normal, "R", "m%d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	batch, err := w.NextBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range batch {
		msgs = append(msgs, e.Message)
	}
	if got := strings.Join(msgs, " "); got != "m0 m1 m2" {
		t.Fatalf("NextBatch = %q, want m0 m1 m2", got)
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if batch, err := w.NextBatch(short); err == nil {
		t.Fatalf("NextBatch on an empty queue with a done context = %v, want an error", batch)
	}
	r.Eventf(p, "", Normal, "R", "m3")
	if batch, err := w.NextBatch(ctx); err != nil || len(batch) != 1 || batch[0].Message != "m3" {
		t.Fatalf("NextBatch after one more = %v, %v; want m3", batch, err)
	}
}

// TestRecorderBoundedInTotal: beyond Limits.Total the oldest event of all
// goes first, whichever pod it belongs to, and a node that churns pods —
// each recorded and forgotten — keeps no more than the events it has.
func TestRecorderBoundedInTotal(t *testing.T) {
	r := NewRecorderWithLimits(clocktesting.NewFakePassiveClock(time.Unix(0, 0)), Limits{PerPod: 3, Total: 5})
	a, b, c := testPod("a"), testPod("b"), testPod("c")
	for i, p := range []*model.Pod{a, a, b, a, a, b, c} { // a0 a1 b2 a3 a4 b5 c6
		r.Eventf(p, "", Normal, "R", "%s%d", p.Name[2:], i)
	}
	// a keeps its newest 3 (a1 a3 a4); 6 in all: the oldest of all, a1, goes.
	var got []string
	for _, e := range r.All() {
		got = append(got, e.Message)
	}
	if want := "a3 a4 b2 b5 c6"; strings.Join(got, " ") != want {
		t.Fatalf("kept %v, want %s", got, want)
	}
	r.Eventf(c, "", Normal, "R", "c7") // drops b2
	r.Eventf(c, "", Normal, "R", "c8") // drops a3
	got = got[:0]
	for _, e := range r.All() {
		got = append(got, e.Message)
	}
	if want := "a4 b5 c6 c7 c8"; strings.Join(got, " ") != want {
		t.Fatalf("kept %v, want %s", got, want)
	}

	r.Forget(a.UID)
	r.Forget(b.UID)
	for i := range 10000 {
		p := testPod(fmt.Sprint("churn-", i))
		r.Eventf(p, "", Normal, "R", "x")
		r.Eventf(p, "", Normal, "R", "y")
		r.Forget(p.UID)
	}
	if got := r.List(c.UID); len(got) != 3 || got[0].Message != "c6" {
		t.Errorf("the long-lived pod keeps %+v, want c6 c7 c8", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.total != 3 || len(r.byPod) != 1 || len(r.order) != 1 || len(r.log) > 2*r.total+64 {
		t.Fatalf("after churn: %d kept, %d pods, %d in order, %d log entries; want 3, 1, 1, at most %d",
			r.total, len(r.byPod), len(r.order), len(r.log), 2*r.total+64)
	}
}
