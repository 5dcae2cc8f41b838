package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// The change log hands over the changes after a resource version while it
// holds them all, across the ring's wrap, and says so when the oldest of
// them went.
func TestChangeLogSince(t *testing.T) {
	l := newChangeLog(4)
	for rv := uint64(1); rv <= 6; rv++ {
		l.add(rv, types.UID(fmt.Sprint("p", rv)))
	}
	// It holds 3..6.
	for _, tc := range []struct {
		since uint64
		ok    bool
		want  []types.UID
	}{
		{6, true, nil},
		{5, true, []types.UID{"p6"}},
		{2, true, []types.UID{"p3", "p4", "p5", "p6"}},
		{1, false, nil},
		{0, false, nil},
	} {
		var got []types.UID
		ok := l.since(tc.since, 6, func(uid types.UID) { got = append(got, uid) })
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("since(%d) = %v, %v; want %v, %v", tc.since, got, ok, tc.want, tc.ok)
		}
	}
	if !newChangeLog(4).since(0, 0, func(types.UID) { t.Error("a change in an empty log") }) {
		t.Error("an empty log does not cover a watch that saw every change")
	}
	if newChangeLog(0).since(0, 1, func(types.UID) {}) {
		t.Error("a log that keeps nothing covers a change")
	}
}

// BenchmarkWatchLook is a watch's look after one change among 1,000
// pods: through the change log, and (every-pod) with a log that keeps
// nothing, as every look was before the log.
func BenchmarkWatchLook(b *testing.B) {
	for _, bc := range []struct {
		name string
		log  int
	}{{"change-log", maxChanges}, {"every-pod", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			a := &Agent{pods: map[types.UID]*entry{}, changes: newChangeLog(bc.log), changed: make(chan struct{})}
			sent := map[types.UID]uint64{}
			var uids []types.UID
			for i := range 1000 {
				p := decode(b, strings.Replace(manifest, "name: web", fmt.Sprintf("name: web-%d", i), 1))
				p.UID = types.UID(fmt.Sprint("uid-", i))
				p.Namespace = "default"
				a.mu.Lock()
				a.recordLocked(p)
				a.mu.Unlock()
				sent[p.UID] = a.rv
				uids = append(uids, p.UID)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				uid := uids[i%len(uids)]
				a.mu.Lock()
				since := a.rv
				a.pods[uid].rv = a.bumpLocked(uid)
				a.mu.Unlock()
				changed, _, _, _ := a.watchLook("default", since, sent)
				if len(changed) != 1 || changed[0].uid != uid {
					b.Fatalf("changed %v, want %s", changed, uid)
				}
			}
		})
	}
}
