package shim

import "time"

// shimClock is where the shim reads the time: its stamps (started,
// finished, notices) and its timers (the pod's stop order, the notices'
// retries, the pipes' drain). The shim has its own process and so the real
// clock (realClock); reading it through one field keeps the lifecycle code
// off time.Now. Not k8s.io/utils/clock: the shim binary links no
// Kubernetes package, and this is all of it the shim needs.
type shimClock interface {
	Now() time.Time
	NewTimer(d time.Duration) shimTimer
	After(d time.Duration) <-chan time.Time // for launch.DrainPipes
}

// shimTimer is a timer of a shimClock.
type shimTimer interface {
	C() <-chan time.Time
	Stop() bool
}

// realClock is the shimClock of package time.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) shimTimer { return realTimer{time.NewTimer(d)} }

func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }

func (t realTimer) Stop() bool { return t.t.Stop() }
