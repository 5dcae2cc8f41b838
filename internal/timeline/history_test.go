package timeline

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestHistoryBuildsInstances turns the notes of a run into instances and
// marks; notes about an instance it does not have change nothing.
func TestHistoryBuildsInstances(t *testing.T) {
	p := demoPod()
	if len(p.Instances) != 7 {
		t.Fatalf("instances: %+v", p.Instances)
	}
	proxy := p.instance("proxy", 0)
	if proxy == nil || !proxy.StopRequestedAt.Equal(at(2.1)) || proxy.Signal != "SIGTERM" || !proxy.KilledAt.Equal(at(4.1)) || proxy.ExitCode != 137 {
		t.Errorf("proxy #0: %+v", proxy)
	}
	if d := p.mark(MarkDeadline); d == nil || !d.At.Equal(at(35)) {
		t.Errorf("deadline: %+v", d)
	}
	h := NewHistory(Limits{})
	h.Note(p.PodRef, Note{Kind: NoteExited, At: at(1), Container: "ghost"})
	if got, _ := h.Get(p.UID); len(got.Instances) != 0 {
		t.Errorf("an exit made an instance: %+v", got.Instances)
	}
	h.Note(p.PodRef, Note{Kind: NoteTerminationBegan, At: at(1), Deadline: at(31), GraceSeconds: 30})
	h.Note(p.PodRef, Note{Kind: NoteDeadlineShortened, At: at(2), Deadline: at(7), GraceSeconds: 5})
	got, _ := h.Get(p.UID)
	if d := got.mark(MarkDeadline); !d.At.Equal(at(7)) || d.Detail != "5s grace period" || len(got.Marks) != 2 {
		t.Errorf("a shortened deadline: %+v", got.Marks)
	}
}

// TestHistoryBounds drops the oldest beyond the per-pod and total
// limits, probe failures before the other marks, and counts the drops.
func TestHistoryBounds(t *testing.T) {
	h := NewHistory(Limits{InstancesPerPod: 3, MarksPerPod: 2, Total: 8})
	a := PodRef{Name: "a", UID: "a"}
	for i := range 5 {
		h.Note(a, Note{Kind: NoteStarted, At: at(float64(i)), Container: "c", Role: RoleMain, Attempt: i})
	}
	h.Note(a, Note{Kind: NoteTerminationBegan, At: at(5), Deadline: at(6)})
	h.Note(a, Note{Kind: NoteProbeFailed, At: at(5.5), Container: "c", Attempt: 4})
	p, _ := h.Get("a")
	if len(p.Instances) != 3 || p.Instances[0].Attempt != 2 || p.Dropped != 3 {
		t.Errorf("per pod: %d instances from attempt %d, %d dropped", len(p.Instances), p.Instances[0].Attempt, p.Dropped)
	}
	if len(p.Marks) != 2 || p.Marks[0].Kind != MarkTerminationRequested || p.Marks[1].Kind != MarkDeadline {
		t.Errorf("marks: the probe failure should have gone first: %+v", p.Marks)
	}
	b := PodRef{Name: "b", UID: "b"}
	for i := range 3 {
		h.Note(b, Note{Kind: NoteStarted, At: at(float64(10 + i)), Container: "c", Role: RoleMain, Attempt: i})
	}
	// 5 of a's + 3 of b's = 8: at the bound. One more drops a's oldest.
	h.Note(b, Note{Kind: NoteTerminated, At: at(20)})
	p, _ = h.Get("a")
	if len(p.Instances) != 2 || p.Instances[0].Attempt != 3 {
		t.Errorf("total: a's oldest should have gone: %+v", p.Instances)
	}
	h.Forget("a")
	if _, ok := h.Get("a"); ok {
		t.Error("a forgotten pod is still kept")
	}
	if _, dirty := h.Take()["a"]; dirty {
		t.Error("a forgotten pod is to be saved")
	}
}

// TestHistoryTakeAndLoad hands out what changed once, and a timeline
// read back from its JSON is the same.
func TestHistoryTakeAndLoad(t *testing.T) {
	p := demoPod()
	h := NewHistory(Limits{})
	ref, notes := demoNotes()
	for _, n := range notes {
		h.Note(ref, n)
	}
	select {
	case <-h.Changed():
	default:
		t.Fatal("no change signalled")
	}
	taken := h.Take()
	if len(taken) != 1 || taken[ref.UID] == nil {
		t.Fatalf("taken: %v", taken)
	}
	if len(h.Take()) != 0 {
		t.Error("taken twice")
	}
	data, err := json.Marshal(taken[ref.UID])
	if err != nil {
		t.Fatal(err)
	}
	var back Pod
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	h2 := NewHistory(Limits{})
	h2.Load(&back)
	got, _ := h2.Get(ref.UID)
	got.Now = p.Now
	if !reflect.DeepEqual(got, p) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, p)
	}
}
