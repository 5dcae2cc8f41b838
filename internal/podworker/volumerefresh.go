package podworker

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// volumeRefresh is what the pod's goroutine keeps of its volumes' upkeep:
// a refresh asked for (inputVolumes) and not yet done, and the backoff of
// failed setups and refreshes (a missing object, a token that cannot be
// had), which doubles from the planner's BackoffBase up to its
// BackoffMax, as a crash loop's. Owned by run.
//
//	news ──▶ pending ──RefreshVolumes──▶ ok: cleared
//	                        │
//	                        └─ failed: FailedMount, retryAt = now + backoff
type volumeRefresh struct {
	pending  bool
	failures int
	retryAt  time.Time
}

// RefreshVolumes tells the pod's worker that what its volumes project
// changed (an object it references, a token of it, its labels or
// annotations): the worker rewrites them (runtime.VolumeRefresher) on its
// next turn, and a pod whose setup waits for a missing object tries it
// again at once. It never blocks; news for a pod no worker owns is
// dropped.
func (w *Workers) RefreshVolumes(uid types.UID) {
	if pw := w.get(uid); pw != nil {
		pw.inbox.push(input{kind: inputVolumes})
	}
}

// observeVolumesChanged takes an inputVolumes: a refresh is due now, a
// setup waiting out its backoff is tried now, since what it lacked may be
// there, and so is the start of a container waiting in
// CreateContainerConfigError for an object (retryConfigNow).
func (pw *podWorker) observeVolumesChanged() {
	pw.retryConfigNow()
	pw.setup.volumesChanged()
}

// refreshVolumes carries a pending refresh out on a set-up, syncing pod,
// when its backoff allows, and returns when to be woken for a retry (zero:
// none). A runtime without the ability drops the refresh.
func (pw *podWorker) refreshVolumes(now time.Time) time.Time {
	v := &pw.setup.vols
	if !v.pending || pw.phase != Syncing || !pw.setup.prepared {
		return time.Time{}
	}
	if now.Before(v.retryAt) {
		return v.retryAt
	}
	r, ok := pw.w.cfg.Runtime.(runtime.VolumeRefresher)
	if !ok {
		v.pending = false
		return time.Time{}
	}
	if err := r.RefreshVolumes(pw.setup.ctx, pw.alloc.pod); err != nil {
		if pw.setup.ctx.Err() != nil {
			return time.Time{}
		}
		// The wait counts from before the event, which a test (or
		// anyone) may answer by moving the clock on.
		failedAt := pw.w.cfg.Clock.Now()
		pw.failedMount(err)
		return v.failed(failedAt, pw.w.cfg.Planner)
	}
	*v = volumeRefresh{}
	return time.Time{}
}

// failedMount reports a failed setup or refresh, err, with a FailedMount
// event (a VolumeError's message is the kubelet's own).
func (pw *podWorker) failedMount(err error) {
	var ve *runtime.VolumeError
	if errors.As(err, &ve) {
		pw.eventf("", events.Warning, events.FailedMount, "%s", ve.Error())
	} else {
		pw.eventf("", events.Warning, events.FailedMount, "Preparing the pod's volumes failed: %v", err)
	}
}

// failed records a failed refresh at now and returns when to try again:
// the next try waits as failedBackoff says.
func (v *volumeRefresh) failed(now time.Time, cfg planner.Config) time.Time {
	v.retryAt = now.Add(v.failedBackoff(cfg))
	return v.retryAt
}

// failedBackoff counts a failed setup or refresh and returns how long to
// wait before the next try: from cfg's BackoffBase, doubled per failure
// in a row, up to its BackoffMax.
func (v *volumeRefresh) failedBackoff(cfg planner.Config) time.Duration {
	d := cfg.BackoffBase
	for i := 0; i < v.failures && d < cfg.BackoffMax; i++ {
		d *= 2
	}
	if cfg.BackoffMax > 0 && d > cfg.BackoffMax {
		d = cfg.BackoffMax
	}
	v.failures++
	return d
}
