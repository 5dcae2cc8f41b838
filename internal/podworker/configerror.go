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
	pw.log.Warn("container configuration", configLogArgs(c.ref.Name, err)...)
}

// configLogArgs are the attributes of the log line of err, a
// configuration error of container: its message, and its cause when it
// has one, which the message may leave out (the kubelet's subPath
// messages name no host path: podspec.SubPathError).
func configLogArgs(container string, err *runtime.ContainerConfigError) []any {
	args := []any{"container", container, "err", err}
	if err.Err != nil {
		args = append(args, "cause", err.Err)
	}
	return args
}

// retryConfigNow records that ConfigMaps or Secrets the pods read have
// changed: a container waiting on its configuration (configFailed) is
// then started again at the next plan, not after the backoff base. It is
// called on the pod's goroutine, by the input that carries such news;
// it decides nothing itself.
func (pw *podWorker) retryConfigNow() {
	pw.objectChanges++
}
