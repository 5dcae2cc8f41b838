package podworker

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// podIPs are the pod's own addresses, the primary first; nil when it has
// none (it shares the host's network).
func (pw *podWorker) podIPs() []string {
	if pa, ok := pw.w.cfg.Runtime.(runtime.PodAddresser); ok {
		return pa.PodIPs(pw.uid)
	}
	return nil
}

// podIP is the pod's own primary address, "" when it has none.
func (pw *podWorker) podIP() string {
	if ips := pw.podIPs(); len(ips) > 0 {
		return ips[0]
	}
	return ""
}

// Waiting reasons of image pulls, as the kubelet reports them.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// imageBackOffShownAfter is how long a failed pull shows ErrImagePull
// before the container shows ImagePullBackOff for the rest of the wait,
// which is what a user of the kubelet sees between two pulls.
const imageBackOffShownAfter = time.Second

// imageState is what the worker knows of one container's image.
type imageState struct {
	// reason is the waiting reason of a failed pull ("" when none failed
	// since the last success), message its error.
	reason, message string
	// failedAt is when the last pull failed; steps counts failures in a
	// row, for the backoff; retryAt is when the next pull may be tried.
	failedAt, retryAt time.Time
	steps             int
	// backOffShown: the BackOff event of this wait was emitted.
	backOffShown bool
	// ref is the runtime's reference to the image last pulled or found.
	ref string
}

// ensureImage applies the container's imagePullPolicy before a start. It
// reports whether the image is there to start from; when it is not, wake
// is when to try again (zero: only on news, e.g. a cancelled pull).
func (pw *podWorker) ensureImage(ctx context.Context, c *ctr, spec *v1.Container) (ok bool, wake time.Time) {
	is, has := pw.w.cfg.Runtime.(runtime.ImageService)
	if !has {
		return true, time.Time{}
	}
	clk := pw.w.cfg.Clock
	now := clk.Now()
	st := &c.image
	if now.Before(st.retryAt) {
		flip := st.failedAt.Add(imageBackOffShownAfter)
		if now.Before(flip) {
			return false, flip
		}
		if st.reason == reasonErrImagePull {
			st.reason = reasonImagePullBackOff
			st.message = fmt.Sprintf("Back-off pulling image %q: %s", spec.Image, st.message)
		}
		if !st.backOffShown {
			st.backOffShown = true
			pw.eventf(c.ref.FieldPath(), events.Normal, events.BackOff, "Back-off pulling image %q", spec.Image)
			pw.eventf(c.ref.FieldPath(), events.Warning, events.Failed, "Error: %s", st.reason)
			pw.publish()
		}
		return false, st.retryAt
	}
	if pw.ending.term != nil {
		// A pull at termination (a defer container whose pre-pull failed)
		// must not outlive the grace period.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pw.ending.term.Deadline.Sub(now))
		defer cancel()
	}
	policy := pw.prePull.policy(c, spec)
	if policy != v1.PullAlways {
		present, err := is.ImagePresent(ctx, spec.Image)
		if err != nil {
			if ctx.Err() != nil {
				return false, time.Time{}
			}
			return pw.pullFailed(c, spec, reasonErrImagePull, fmt.Errorf("checking the image: %w", err))
		}
		if present {
			pw.eventf(c.ref.FieldPath(), events.Normal, events.Pulled, "Container image %q already present on machine", spec.Image)
			c.image = imageState{ref: st.ref}
			return true, time.Time{}
		}
		if policy == v1.PullNever {
			return pw.pullFailed(c, spec, reasonErrImageNeverPull, fmt.Errorf("container image %q is not present with pull policy of Never", spec.Image))
		}
	}
	pulled, err := pw.pull(ctx, is, pw.pod, c.ref, spec.Image, "")
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled by a kill (or the end of the grace period):
			// nothing starts, the kill decides what comes next.
			return false, time.Time{}
		}
		return pw.pullFailed(c, spec, reasonErrImagePull, err)
	}
	c.image = imageState{ref: pulled.Ref}
	return true, time.Time{}
}

// pull pulls one image of pod with its Pulling/Pulled/Failed events; note
// qualifies the events' messages (a pre-pull). The pre-pull calls it from
// the background, so the pod comes as an argument.
func (pw *podWorker) pull(ctx context.Context, is runtime.ImageService, pod *model.Pod, ref model.ContainerRef, image, note string) (runtime.PulledImage, error) {
	pw.eventFor(pod, ref.FieldPath(), events.Normal, events.Pulling, "Pulling image %q%s", image, note)
	pulled, err := is.PullImage(ctx, pod, image)
	if err != nil {
		if ctx.Err() == nil {
			pw.eventFor(pod, ref.FieldPath(), events.Warning, events.Failed, "Failed to pull image %q%s: %v", image, note, err)
		}
		return pulled, err
	}
	pw.eventFor(pod, ref.FieldPath(), events.Normal, events.Pulled, "Successfully pulled image %q in %s%s. Image size: %d bytes.",
		image, pulled.Duration.Round(time.Millisecond), note, pulled.Size)
	return pulled, nil
}

// pullFailed records a failed pull and its backoff.
func (pw *podWorker) pullFailed(c *ctr, spec *v1.Container, reason string, err error) (bool, time.Time) {
	now := pw.w.cfg.Clock.Now()
	st := &c.image
	st.steps++
	st.reason, st.message = reason, err.Error()
	st.failedAt = now
	st.retryAt = now.Add(pw.w.cfg.Planner.Delay(st.steps))
	st.backOffShown = false
	// The kubelet counts a start whose image pull failed, with the pull's
	// reason as its error code.
	pw.w.cfg.Metrics.ContainerStarted(c.ref.Role)
	pw.w.cfg.Metrics.ContainerStartFailed(c.ref.Role, reason)
	if reason == reasonErrImageNeverPull {
		pw.eventf(c.ref.FieldPath(), events.Warning, events.ErrImageNeverPull, "%v", err)
	}
	pw.eventf(c.ref.FieldPath(), events.Warning, events.Failed, "Error: %s", reason)
	pw.log.Error("image pull", "container", c.ref.Name, "image", spec.Image, "err", err)
	pw.publish()
	return false, now.Add(imageBackOffShownAfter)
}

// prePullNote is how the events of a pre-pull say what they are.
func prePullNote(name string) string {
	return fmt.Sprintf(" (defer-container pre-pull for %s)", name)
}

// maybePrePull starts, once, the background pull of the defer containers'
// images once the pod runs, so that at termination they start without a
// pull. Images already present are left alone unless their policy is
// Always; a pre-pull that fails is simply not recorded, and the start at
// termination pulls (and retries) within the grace period.
func (pw *podWorker) maybePrePull(ctx context.Context) {
	is, has := pw.w.cfg.Runtime.(runtime.ImageService)
	if !has || pw.prePull.started || len(pw.pod.Defer) == 0 || pw.phase != Syncing {
		return
	}
	if planner.Phase(pw.pod, pw.ctrs.observed(), false) != v1.PodRunning {
		return
	}
	pw.prePull.started = true
	type job struct {
		ref   model.ContainerRef
		image string
		pull  bool // Always: pull even when present
	}
	var jobs []job
	for _, c := range pw.ctrs.list {
		if c.ref.Role != model.RoleDefer {
			continue
		}
		spec := pw.pod.Container(c.ref)
		p := spec.ImagePullPolicy
		if p == v1.PullNever {
			continue
		}
		jobs = append(jobs, job{ref: c.ref, image: spec.Image, pull: p == v1.PullAlways})
	}
	pctx, pod := pw.setup.ctx, pw.pod // a kill ends the pre-pull; the defer start pulls then
	pw.w.wg.Add(1)
	go func() {
		defer pw.w.wg.Done()
		defer close(pw.prePull.done)
		var done []string
		for _, j := range jobs {
			if !j.pull {
				present, err := is.ImagePresent(pctx, j.image)
				if err == nil && present {
					continue
				}
			}
			if _, err := pw.pull(pctx, is, pod, j.ref, j.image, prePullNote(j.ref.Name)); err != nil {
				if pctx.Err() != nil {
					break
				}
				continue
			}
			done = append(done, j.ref.Name)
		}
		pw.inbox.push(input{kind: inputPrePulled, pulled: done})
	}()
}
