package agent

import "k8s.io/apimachinery/pkg/types"

// maxChanges bounds the agent's log of recent pod changes: a watch behind
// by more changes than that looks at every pod once to catch up.
const maxChanges = 4096

// changeLog is the agent's most recent pod changes, each the resource
// version it handed out and the pod it went to, oldest first, in a ring
// of fixed size. Every resource version goes to exactly one change, so
// the log holds every change after any version from its oldest one's less
// one on: a watch woken by a change looks at the few pods that changed
// since it last looked, not at every pod (with 1,000 pods, a delete of all
// of them cost the watches a pass over all that were left per wake).
type changeLog struct {
	ring  []change
	first int // index in ring of the oldest change
	n     int
}

type change struct {
	rv  uint64
	uid types.UID
}

func newChangeLog(size int) *changeLog { return &changeLog{ring: make([]change, size)} }

// add logs that the pod uid changed at resource version rv, one more than
// the last one added; the oldest change goes when the log is full.
func (l *changeLog) add(rv uint64, uid types.UID) {
	if len(l.ring) == 0 {
		return
	}
	if l.n < len(l.ring) {
		l.ring[(l.first+l.n)%len(l.ring)] = change{rv, uid}
		l.n++
		return
	}
	l.ring[l.first] = change{rv, uid}
	l.first = (l.first + 1) % len(l.ring)
}

// since calls fn with the pod of every change after resource version rv,
// oldest first, and says whether the log held them all (false: some are
// gone from it, and fn was not called). last is the agent's last resource
// version.
func (l *changeLog) since(rv, last uint64, fn func(types.UID)) bool {
	if rv >= last {
		return true
	}
	if l.n == 0 || l.ring[l.first].rv > rv+1 {
		return false
	}
	// The versions are consecutive: the change after rv is this far in.
	for i := int(rv + 1 - l.ring[l.first].rv); i < l.n; i++ {
		fn(l.ring[(l.first+i)%len(l.ring)].uid)
	}
	return true
}
