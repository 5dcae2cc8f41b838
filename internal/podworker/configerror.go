package podworker

import (
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/runtime"
)

// configFailed records a start that failed because the container's
// configuration could not be made (runtime.ContainerConfigError: a
// ConfigMap, Secret or key its environment needs is missing), as the
// kubelet does: the container keeps its state (no instance started, no
// restart counted, the pod does not fail) and waits with reason
// CreateContainerConfigError and the error's message, with a Warning
// Failed event "Error: <message>". When it is tried again is the
// planner's decision (its configRetries stage), from the facts recorded
// here: when it failed, and how many object changes the worker had been
// told of by then.
func (pw *podWorker) configFailed(c *ctr, err *runtime.ContainerConfigError) {
	now := pw.w.cfg.Clock.Now()
	c.configErr = err.Message
	c.obs.ConfigErrorAt = now
	c.obs.ConfigErrorChanges = pw.objectChanges
	pw.w.cfg.Metrics.ContainerStartFailed(c.ref.Role, StartErrorConfig)
	pw.eventf(c.ref.FieldPath(), events.Warning, events.Failed, "Error: %s", err.Message)
	args := []any{"container", c.ref.Name, "err", err}
	if err.Err != nil {
		// The message may hide what the host told (a subPath's path): the
		// log has it.
		args = append(args, "cause", err.Err)
	}
	pw.log.Warn("container configuration", args...)
}

// retryConfigNow records that ConfigMaps or Secrets the pods read have
// changed: a container waiting on its configuration (configFailed) is
// then started again at the next plan, not after the backoff base. It is
// called on the pod's goroutine, by the input that carries such news;
// it decides nothing itself.
func (pw *podWorker) retryConfigNow() {
	pw.objectChanges++
}
