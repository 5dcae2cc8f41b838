package podworker

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/prober"
)

// startPostStart runs the container's postStart hook in the background.
// Until it has finished the container does not count as started (a
// sidecar holds back the next init container); its result comes back to
// the pod's goroutine as a hookResult. The hook is cut off when the
// instance stops or the agent stops.
func (pw *podWorker) startPostStart(ctx context.Context, c *ctr, h *v1.LifecycleHandler) {
	hctx, cancel := context.WithCancel(ctx)
	c.hookCancel = cancel
	pod, ref, id, spec := pw.pod, c.ref, c.id, pw.pod.Container(c.ref)
	pw.w.wg.Add(1)
	go func() {
		defer pw.w.wg.Done()
		defer cancel()
		err := pw.runHook(hctx, pod, ref, spec, h, time.Time{})
		if ctx.Err() != nil {
			return // the agent stops: the next one runs the hook again
		}
		pw.inbox.push(input{kind: inputHookDone, hook: hookResult{container: ref.Name, id: id, err: err}})
	}()
}

// observeHook applies a postStart result: the container is started, or —
// on failure — the failure is recorded (Observed.PostStartFailedAt) and its
// probes stop: the planner stops it gracefully (its preStop hook, its stop
// signal, SIGKILL after the pod's grace period: planner containerStops),
// and its restart policy applies to how it exits. The kubelet does the
// same: startContainer kills a container whose postStart hook failed with
// killContainer, reason FailedPostStartHook
// (pkg/kubelet/kuberuntime/kuberuntime_container.go). Its events are the
// kubelet's words too; the hook's output is only logged, never put in the
// event, so that secrets do not leak into events.
func (pw *podWorker) observeHook(r hookResult) {
	c := pw.ctrs.byName[r.container]
	if c == nil || c.id != r.id || c.obs.State != planner.Running {
		return
	}
	c.hookCancel = nil
	if r.err == nil {
		pw.running(c)
		return
	}
	pw.log.Error("postStart hook failed", "container", c.ref.Name, "err", r.err)
	pw.eventf(c.ref.FieldPath(), events.Warning, events.FailedPostStartHook, "PostStartHook failed")
	if c.obs.StopRequestedAt.IsZero() && c.obs.PostStartFailedAt.IsZero() {
		c.obs.PostStartFailedAt = pw.w.cfg.Clock.Now()
		pw.removeProbes(c)
	}
}

// runHook runs a lifecycle handler in the container's context, cut off at
// deadline when it is set.
func (pw *podWorker) runHook(ctx context.Context, pod *model.Pod, ref model.ContainerRef, spec *v1.Container, h *v1.LifecycleHandler, deadline time.Time) error {
	clk := pw.w.cfg.Clock
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !deadline.IsZero() {
		t := clk.AfterFunc(deadline.Sub(clk.Now()), cancel)
		defer t.Stop()
	}
	switch {
	case h.Exec != nil:
		out, code, err := pw.w.cfg.Runtime.Exec(hctx, pod, ref, h.Exec.Command)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command %q exited with %d: %s", strings.Join(h.Exec.Command, " "), code, strings.TrimSpace(string(out)))
		}
		return nil
	case h.Sleep != nil:
		// Needs no binary in the container: the agent waits.
		st := clk.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer st.Stop()
		select {
		case <-st.C():
		case <-hctx.Done():
		}
		return nil
	case h.HTTPGet != nil:
		return prober.HTTPGet(hctx, spec, prober.WithHost(h.HTTPGet, pw.podIP()))
	default:
		return fmt.Errorf("handler not supported: set exec, httpGet or sleep")
	}
}
