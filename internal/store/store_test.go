package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTest opens a store in a fresh directory and closes it when the test
// ends.
func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "podward.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		// Tests that close the store themselves make this fail; that is fine.
		_ = s.Close()
	})
	return s, path
}

const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations:
    team: payments
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "upload", "image": "busybox", "command": ["sh", "-c", "upload logs"]},
       {"name": "notify", "image": "curl", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: proxy
    image: envoy
    restartPolicy: Always
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {cpu: 250m, memory: 128Mi}
`

// decodedPod decodes the manifest above and gives it a UID and a status.
func decodedPod(t *testing.T, uid string) *model.Pod {
	t.Helper()
	pods, err := model.Decode([]byte(manifest))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	p := pods[0]
	if len(p.Defer) != 2 {
		t.Fatalf("decoded %d defer containers, want 2", len(p.Defer))
	}
	p.UID = types.UID(uid)
	// metav1.Time is stored with second precision, like in Kubernetes.
	created := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p.CreationTimestamp = created
	p.Status = v1.PodStatus{
		Phase:     v1.PodRunning,
		StartTime: &created,
		Conditions: []v1.PodCondition{{
			Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: created,
		}},
		ContainerStatuses: []v1.ContainerStatus{{
			Name:         "app",
			Ready:        true,
			RestartCount: 2,
			State:        v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: created}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", FinishedAt: created,
			}},
		}},
	}
	return p
}

func TestPodRoundTrip(t *testing.T) {
	s, _ := openTest(t, Options{})
	want := decodedPod(t, "uid-1")
	if err := s.PutPod(want); err != nil {
		t.Fatalf("PutPod: %v", err)
	}
	got, err := s.GetPod("uid-1")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	if got.Pod == want.Pod {
		t.Fatal("GetPod returned the stored pointer, want a copy")
	}
	// Semantic: quantities compare by value, not by their cached string.
	if !equality.Semantic.DeepEqual(got.Pod, want.Pod) {
		t.Errorf("pod differs after round trip:\ngot  %+v\nwant %+v", got.Pod, want.Pod)
	}
	if !equality.Semantic.DeepEqual(got.Defer, want.Defer) {
		t.Errorf("defer containers differ:\ngot  %+v\nwant %+v", got.Defer, want.Defer)
	}
	if got.Annotations["team"] != "payments" || got.Annotations[model.DeferContainersAnnotation] == "" {
		t.Errorf("annotations = %v", got.Annotations)
	}
	if got.Status.ContainerStatuses[0].LastTerminationState.Terminated.Reason != "OOMKilled" {
		t.Errorf("status = %+v", got.Status)
	}

	// Put replaces.
	want.Status.Phase = v1.PodSucceeded
	if err := s.PutPod(want); err != nil {
		t.Fatalf("PutPod again: %v", err)
	}
	if got, err := s.GetPod("uid-1"); err != nil || got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("after replace: phase %v, err %v", got.Status.Phase, err)
	}
}

func TestPutPodRejects(t *testing.T) {
	s, _ := openTest(t, Options{})
	tests := map[string]*model.Pod{
		"nil pod":       nil,
		"nil v1.Pod":    {},
		"no UID":        {Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}},
		"defer, no pod": {Pod: nil, Defer: []v1.Container{{Name: "x"}}},
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			if err := s.PutPod(p); err == nil {
				t.Fatal("PutPod succeeded, want an error")
			}
		})
	}
}

func TestGetPodNotFound(t *testing.T) {
	s, _ := openTest(t, Options{})
	if _, err := s.GetPod("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetPod = %v, want ErrNotFound", err)
	}
}

func TestListPodsOrder(t *testing.T) {
	s, _ := openTest(t, Options{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pod := func(uid, ns, name string, created time.Time) *model.Pod {
		return &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(uid), Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created),
		}}}
	}
	// Put in an order that matches neither UID nor the wanted order.
	for _, p := range []*model.Pod{
		pod("a", "default", "late", t0.Add(time.Minute)),
		pod("b", "zeta", "x", t0),
		pod("c", "alpha", "y", t0),
		pod("d", "alpha", "b", t0),
		pod("e", "default", "earliest", t0.Add(-time.Hour)),
		pod("f", "alpha", "b", t0), // same time and key as d: UID decides
	} {
		if err := s.PutPod(p); err != nil {
			t.Fatalf("PutPod %s: %v", p.UID, err)
		}
	}
	pods, err := s.ListPods()
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	var got []string
	for _, p := range pods {
		got = append(got, string(p.UID))
	}
	if want := "e d f c b a"; strings.Join(got, " ") != want {
		t.Fatalf("ListPods order = %v, want %s", got, want)
	}
}

func event(uid types.UID, at time.Time, msg string) events.Event {
	return events.Event{
		Time: at, Type: events.Normal, Reason: "Started", Namespace: "default",
		Pod: "p-" + string(uid), PodUID: uid, FieldPath: "spec.containers{app}", Message: msg,
	}
}

// storePods stores a bare pod under each uid: the store keeps the events
// of stored pods only.
func storePods(t testing.TB, s *Store, uids ...types.UID) {
	t.Helper()
	for _, uid := range uids {
		if err := s.PutPod(&model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: "p-" + string(uid)}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeletePodRemovesPodCheckpointAndEvents(t *testing.T) {
	s, _ := openTest(t, Options{})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, uid := range []types.UID{"gone", "kept"} {
		if err := s.PutPod(&model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid)}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutCheckpoint(uid, []byte("cp-"+uid)); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := s.AppendEvent(event(uid, now, fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}

	if err := s.DeletePod("gone"); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	if _, err := s.GetPod("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPod after delete = %v, want ErrNotFound", err)
	}
	if _, err := s.GetCheckpoint("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetCheckpoint after delete = %v, want ErrNotFound", err)
	}
	if evs, err := s.ListEvents("gone"); err != nil || len(evs) != 0 {
		t.Errorf("ListEvents after delete = %v, %v; want none", evs, err)
	}
	all, err := s.ListAllEvents()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.PodUID != "kept" {
			t.Errorf("ListAllEvents still has %+v", e)
		}
	}

	// The other pod is untouched.
	if _, err := s.GetPod("kept"); err != nil {
		t.Errorf("GetPod kept: %v", err)
	}
	if cp, err := s.GetCheckpoint("kept"); err != nil || string(cp) != "cp-kept" {
		t.Errorf("GetCheckpoint kept = %q, %v", cp, err)
	}
	if evs, _ := s.ListEvents("kept"); len(evs) != 3 {
		t.Errorf("kept pod has %d events, want 3", len(evs))
	}

	// Idempotent: deleting again, or a pod that never existed, is fine.
	for _, uid := range []types.UID{"gone", "never"} {
		if err := s.DeletePod(uid); err != nil {
			t.Errorf("DeletePod(%s) = %v, want nil", uid, err)
		}
	}

	// The event of a pod removed meanwhile is not kept: it would bring its
	// bucket back for good.
	if err := s.AppendEvent(event("gone", now, "late")); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendEvent of a removed pod = %v, want ErrNotFound", err)
	}
	if evs, err := s.ListEvents("gone"); err != nil || len(evs) != 0 {
		t.Errorf("ListEvents after a late event = %v, %v; want none", evs, err)
	}

	// A pod recreated under the same UID starts a fresh event history.
	storePods(t, s, "gone")
	if err := s.AppendEvent(event("gone", now, "again")); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.ListEvents("gone"); len(evs) != 1 || evs[0].Message != "again" {
		t.Errorf("events after recreate = %+v", evs)
	}
}

func TestEventsBoundedAndOrdered(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		perPod   int
		appended int
		wantFrom int // first message kept
	}{
		"under the bound":     {perPod: 5, appended: 3, wantFrom: 0},
		"exactly the bound":   {perPod: 5, appended: 5, wantFrom: 0},
		"over the bound":      {perPod: 5, appended: 12, wantFrom: 7},
		"bound of one":        {perPod: 1, appended: 4, wantFrom: 3},
		"default bound":       {perPod: 0, appended: 10, wantFrom: 0},
		"negative is default": {perPod: -1, appended: 2, wantFrom: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := openTest(t, Options{EventsPerPod: tc.perPod})
			storePods(t, s, "p")
			for i := range tc.appended {
				// Times run backwards: order must be insertion, not time.
				if err := s.AppendEvent(event("p", t0.Add(-time.Duration(i)*time.Second), fmt.Sprint(i))); err != nil {
					t.Fatalf("AppendEvent %d: %v", i, err)
				}
			}
			got, err := s.ListEvents("p")
			if err != nil {
				t.Fatalf("ListEvents: %v", err)
			}
			if len(got) != tc.appended-tc.wantFrom {
				t.Fatalf("kept %d events, want %d", len(got), tc.appended-tc.wantFrom)
			}
			for i, e := range got {
				want := event("p", t0.Add(-time.Duration(tc.wantFrom+i)*time.Second), fmt.Sprint(tc.wantFrom+i))
				if !e.Time.Equal(want.Time) {
					t.Errorf("event %d time %v, want %v", i, e.Time, want.Time)
				}
				e.Time = want.Time
				if e != want {
					t.Errorf("event %d = %+v, want %+v", i, e, want)
				}
			}
		})
	}
}

func TestEventsBoundShrinksOnReopen(t *testing.T) {
	s, path := openTest(t, Options{EventsPerPod: 10})
	storePods(t, s, "p")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		if err := s.AppendEvent(event("p", t0, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{EventsPerPod: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AppendEvent(event("p", t0, "10")); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ListEvents("p")
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Message)
	}
	if strings.Join(msgs, " ") != "8 9 10" {
		t.Fatalf("kept %v, want [8 9 10]", msgs)
	}
}

func TestListAllEventsOrder(t *testing.T) {
	s, _ := openTest(t, Options{})
	storePods(t, s, "a", "b", "c")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []events.Event{
		event("b", t0.Add(2*time.Second), "b-late"),
		event("b", t0, "b-first-at-t0"),
		event("a", t0, "a-second-at-t0"),
		event("c", t0.Add(-time.Second), "c-earliest"),
		event("a", t0, "a-third-at-t0"),
		event("c", t0.Add(time.Second), "c-mid"),
	} {
		if err := s.AppendEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ListAllEvents()
	if err != nil {
		t.Fatalf("ListAllEvents: %v", err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.Message)
	}
	want := "c-earliest b-first-at-t0 a-second-at-t0 a-third-at-t0 c-mid b-late"
	if strings.Join(got, " ") != want {
		t.Fatalf("ListAllEvents = %v\nwant %s", got, want)
	}
}

func TestAppendEventRejectsEmptyUID(t *testing.T) {
	s, _ := openTest(t, Options{})
	if err := s.AppendEvent(events.Event{Reason: "Started"}); err == nil {
		t.Fatal("AppendEvent without PodUID succeeded")
	}
}

func TestConcurrentAppends(t *testing.T) {
	const writers, each, perPod = 8, 25, 10
	s, _ := openTest(t, Options{EventsPerPod: perPod})
	storePods(t, s, "pod-0", "pod-1")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		uid := types.UID(fmt.Sprint("pod-", w%2))
		wg.Go(func() {
			for i := range each {
				if err := s.AppendEvent(event(uid, t0, fmt.Sprint(w, "-", i))); err != nil {
					errs <- err
				}
				if _, err := s.ListAllEvents(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, uid := range []types.UID{"pod-0", "pod-1"} {
		evs, err := s.ListEvents(uid)
		if err != nil || len(evs) != perPod {
			t.Errorf("pod %s: %d events, %v; want %d", uid, len(evs), err, perPod)
		}
	}
}

func TestCheckpoint(t *testing.T) {
	s, _ := openTest(t, Options{})
	if _, err := s.GetCheckpoint("p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetCheckpoint before put = %v, want ErrNotFound", err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"blob", []byte{0, 1, 2, 0xff}},
		{"replaced", []byte(`{"step":"StartContainer","container":"app"}`)},
		{"empty", []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.PutCheckpoint("p", tc.data); err != nil {
				t.Fatalf("PutCheckpoint: %v", err)
			}
			got, err := s.GetCheckpoint("p")
			if err != nil {
				t.Fatalf("GetCheckpoint: %v", err)
			}
			if string(got) != string(tc.data) {
				t.Fatalf("GetCheckpoint = %q, want %q", got, tc.data)
			}
		})
	}
	// The returned slice is the caller's: changing it changes nothing stored.
	if err := s.PutCheckpoint("p", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetCheckpoint("p")
	got[0] = 'X'
	if again, _ := s.GetCheckpoint("p"); string(again) != "abc" {
		t.Fatalf("stored checkpoint changed to %q", again)
	}
	if err := s.PutCheckpoint("", []byte("x")); err == nil {
		t.Fatal("PutCheckpoint with empty UID succeeded")
	}
}

func TestMeta(t *testing.T) {
	s, _ := openTest(t, Options{})
	if v, err := s.GetMeta("bootID"); err != nil || v != "" {
		t.Fatalf("GetMeta unset = %q, %v; want \"\", nil", v, err)
	}
	for _, v := range []string{"boot-1", "boot-2", ""} {
		if err := s.PutMeta("bootID", v); err != nil {
			t.Fatalf("PutMeta(%q): %v", v, err)
		}
		if got, err := s.GetMeta("bootID"); err != nil || got != v {
			t.Fatalf("GetMeta = %q, %v; want %q", got, err, v)
		}
	}
	if err := s.PutMeta("", "x"); err == nil {
		t.Fatal("PutMeta with empty key succeeded")
	}
}

func TestSecondOpenFailsWithErrLocked(t *testing.T) {
	_, path := openTest(t, Options{})
	start := time.Now()
	s2, err := Open(path, Options{})
	elapsed := time.Since(start)
	if err == nil {
		s2.Close()
		t.Fatal("second Open succeeded while the first is open")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if want := "another podward agent holds " + path; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// bbolt retries every 50ms until the timeout; allow scheduling slack.
	if limit := lockTimeout + time.Second; elapsed > limit {
		t.Errorf("second Open took %v, want under %v", elapsed, limit)
	}
}

func TestOpenAfterCloseSucceeds(t *testing.T) {
	s, path := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "podward.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}
}

func TestOpenRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podward.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a bolt file ", 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, Options{}); err == nil {
		s.Close()
		t.Fatal("Open of a garbage file succeeded")
	} else if errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a garbage file = %v, must not be ErrLocked", err)
	}
}

func TestReopenSeesAllData(t *testing.T) {
	s, path := openTest(t, Options{EventsPerPod: 5})
	pod := decodedPod(t, "uid-1")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	if err := s.PutPod(pod); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCheckpoint("uid-1", []byte("cp")); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if err := s.AppendEvent(event("uid-1", t0, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutMeta("bootID", "boot-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err := Open(path, Options{EventsPerPod: 5})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.GetPod("uid-1")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Pod, pod.Pod) || !equality.Semantic.DeepEqual(got.Defer, pod.Defer) {
		t.Errorf("pod differs after reopen")
	}
	if cp, err := s.GetCheckpoint("uid-1"); err != nil || string(cp) != "cp" {
		t.Errorf("checkpoint = %q, %v", cp, err)
	}
	evs, err := s.ListEvents("uid-1")
	if err != nil || len(evs) != 5 || evs[0].Message != "2" || evs[4].Message != "6" {
		t.Errorf("events after reopen = %+v, %v; want 2..6", evs, err)
	}
	if len(evs) > 0 && !evs[0].Time.Equal(t0) {
		t.Errorf("event time %v, want %v (nanoseconds kept)", evs[0].Time, t0)
	}
	if v, err := s.GetMeta("bootID"); err != nil || v != "boot-1" {
		t.Errorf("meta = %q, %v", v, err)
	}
	// Appending continues the sequence after the kept events.
	if err := s.AppendEvent(event("uid-1", t0, "7")); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.ListEvents("uid-1"); len(evs) != 5 || evs[0].Message != "3" || evs[4].Message != "7" {
		t.Errorf("events after append = %+v; want 3..7", evs)
	}
}

func TestClosedStoreFails(t *testing.T) {
	s, _ := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(event("p", time.Now(), "x")); err == nil {
		t.Error("AppendEvent after Close succeeded")
	}
	if _, err := s.GetPod("p"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("GetPod after Close = %v, want a closed-database error", err)
	}
}

// BenchmarkAppendEvent measures one durable append in the steady state: the
// pods already hold EventsPerPod events, so every append also drops one.
func BenchmarkAppendEvent(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "podward.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const pods = 10
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	uids := make([]types.UID, pods)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("0b6f7c1e-7d4a-4c52-9a8e-%012d", i))
	}
	storePods(b, s, uids...)
	// Fill in one transaction; the benchmark itself uses the public,
	// one-commit-per-event path.
	err = s.db.Update(func(tx *bolt.Tx) error {
		et := openEventTx(tx)
		for i := range DefaultEventsPerPod {
			for _, uid := range uids {
				if err := s.appendEvent(et, event(uid, t0.Add(time.Duration(i)*time.Millisecond), "Started container app")); err != nil {
					return err
				}
			}
		}
		return et.save()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.AppendEvent(event(uids[i%pods], t0.Add(time.Duration(i)*time.Millisecond), "Started container app")); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSizeGrows: Size is the database's size, which a large checkpoint
// makes larger (the podward_store_size_bytes gauge reads it).
func TestSizeGrows(t *testing.T) {
	s, _ := openTest(t, Options{})
	before, err := s.Size()
	if err != nil || before <= 0 {
		t.Fatalf("Size of a new store = %d, %v; want > 0", before, err)
	}
	if err := s.PutCheckpoint("big", []byte(strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	after, err := s.Size()
	if err != nil || after < before+1<<20 {
		t.Errorf("Size after a 1 MiB checkpoint = %d, %v; want at least %d", after, err, before+1<<20)
	}
}

// TestAppendEventsBatch: a batch is stored as the same events appended one
// by one would be (order, per-pod bound); the events
// of pods the store does not have are dropped without failing the rest,
// and one without a pod UID is named in the error.
func TestAppendEventsBatch(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, _ := openTest(t, Options{EventsPerPod: 2})
	storePods(t, s, "a", "b")
	batch := []events.Event{
		event("a", t0, "a0"), event("gone", t0, "lost"), event("b", t0, "b0"),
		event("a", t0, "a1"), event("", t0, "no uid"), event("a", t0, "a2"),
	}
	err := s.AppendEvents(batch)
	if err == nil || !strings.Contains(err.Error(), "empty pod UID") {
		t.Errorf("AppendEvents = %v, want the error of the event without a pod UID", err)
	}
	for uid, want := range map[types.UID]string{"a": "a1 a2", "b": "b0", "gone": ""} {
		got, err := s.ListEvents(uid)
		if err != nil {
			t.Fatalf("ListEvents(%s): %v", uid, err)
		}
		var msgs []string
		for _, e := range got {
			msgs = append(msgs, e.Message)
		}
		if strings.Join(msgs, " ") != want {
			t.Errorf("events of %s = %q, want %q", uid, msgs, want)
		}
	}
	all, err := s.ListAllEvents()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("ListAllEvents has %d events, want 3", len(all))
	}
}
