package podworker

import (
	"context"
	"time"

	"github.com/podward/podward/internal/planner"
)

// setup is what the pod's goroutine keeps of setting the pod up: the
// context its setup, and while the pod syncs its starts and the defer
// images' pre-pull, run under; whether the setup (Runtime.PreparePod)
// succeeded, and when a failed one is tried again; the upkeep of its
// volumes once set up (volumerefresh.go).
//
// ctx and cancel are set at creation and never change: cancel may be
// called from any goroutine (a kill cancels the setup at once,
// inbox.update), and background work the goroutine begins keeps ctx. The
// rest is owned by run (and by Restore before run starts).
//
//	not prepared ──PreparePod ok──▶ prepared (once) ──▶ vols: refreshes on news
//	      └─ failed: FailedMount, retryAt = now + backoff (vols.failures)
type setup struct {
	ctx    context.Context
	cancel context.CancelFunc
	// prepared: the pod's setup (PreparePod) succeeded; retryAt is when a
	// failed one is tried again.
	prepared bool
	retryAt  time.Time
	// vols is the pending refresh of the pod's volumes and the failed
	// setups' backoff (volumerefresh.go).
	vols volumeRefresh
}

func newSetup(parent context.Context) setup {
	ctx, cancel := context.WithCancel(parent)
	return setup{ctx: ctx, cancel: cancel}
}

// due says whether a setup may be tried at now (its backoff is over).
func (s *setup) due(now time.Time) bool {
	return !now.Before(s.retryAt)
}

// failed records a failed setup at now and returns when to try again
// (its backoff: vols.failedBackoff).
func (s *setup) failed(now time.Time, cfg planner.Config) time.Time {
	s.retryAt = now.Add(s.vols.failedBackoff(cfg))
	return s.retryAt
}

// succeeded records the setup done: the backoff of its failures is over.
func (s *setup) succeeded() {
	s.prepared = true
	s.vols = volumeRefresh{}
}

// volumesChanged takes the news that what the pod's volumes project
// changed: a refresh is due now, and a setup waiting out its backoff is
// tried now, since what it lacked may be there.
func (s *setup) volumesChanged() {
	s.vols.pending = true
	s.vols.retryAt = time.Time{}
	if !s.prepared {
		s.retryAt = time.Time{}
	}
}
