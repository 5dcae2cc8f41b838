package podworker

import "time"

// milestones is what the pod's goroutine keeps of its own start, which
// the start metrics measure (Metrics.WorkerStarted, Metrics.PodRunning):
// when the worker was made, and whether its first turn and the pod's
// first Running phase were counted. seen is set at creation; the rest is
// owned by run (and by Restore before run starts). Each is counted once.
type milestones struct {
	// seen is when the worker was made, which the start metrics count
	// from.
	seen time.Time
	// stepped: the goroutine took its first turn; runningNoted: the pod's
	// first Running phase was reported, or it was resumed from a
	// checkpoint and is not to be.
	stepped      bool
	runningNoted bool
}

// firstStep reports whether the turn at now is the goroutine's first, and
// how long after the worker was made it came.
func (m *milestones) firstStep(now time.Time) (first bool, after time.Duration) {
	if m.stepped {
		return false, 0
	}
	m.stepped = true
	return true, now.Sub(m.seen)
}

// firstRunning reports whether running, the pod's phase being Running at
// now, is the first time it is so, and how long after the worker was made.
func (m *milestones) firstRunning(running bool, now time.Time) (first bool, after time.Duration) {
	if m.runningNoted || !running {
		return false, 0
	}
	m.runningNoted = true
	return true, now.Sub(m.seen)
}

// resumed records a pod resumed from a checkpoint: its start was
// measured, if at all, by the agent that started it.
func (m *milestones) resumed() {
	m.runningNoted = true
}
