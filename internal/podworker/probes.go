package podworker

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/prober"
	"github.com/podward/podward/internal/timeline"
)

// Prober runs the probes of started container instances; their results
// come back through Workers.HandleProbe. None of its calls may block.
type Prober interface {
	// AddContainer starts the probes of an instance whose process runs and
	// whose postStart hook finished; startedAt anchors initialDelaySeconds.
	AddContainer(pod *model.Pod, ref model.ContainerRef, id string, startedAt time.Time)
	// ResumeContainer is AddContainer for an instance found running after
	// an agent restart, whose readiness verdict the checkpoint kept
	// (ready): its readiness probe goes on from that verdict.
	ResumeContainer(pod *model.Pod, ref model.ContainerRef, id string, startedAt time.Time, ready bool)
	// RemoveContainer stops the probes of an instance.
	RemoveContainer(podUID types.UID, container, id string)
	// RemovePod stops every probe of a pod.
	RemovePod(podUID types.UID)
}

// HandleProbe routes a probe result to its pod's worker. Results for pods
// no worker owns are dropped.
func (w *Workers) HandleProbe(r prober.Result) {
	pw := w.get(r.PodUID)
	if pw == nil {
		return
	}
	pw.inbox.push(input{kind: inputProbe, probe: r})
}

func hasProbes(c *v1.Container) bool {
	return c != nil && (c.StartupProbe != nil || c.ReadinessProbe != nil || c.LivenessProbe != nil)
}

// running is called when an instance's process runs and its postStart hook
// (if any) has finished. Without a startupProbe it is started now; with one,
// once the probe succeeds. Its probes begin.
func (pw *podWorker) running(c *ctr) {
	spec := pw.pod.Container(c.ref)
	if spec == nil || spec.StartupProbe == nil {
		c.obs.Started, c.obs.StartedOnce = true, true
	}
	c.ready = false
	pw.addProbes(c, spec)
}

// addProbes hands an instance to the prober. A container that already
// counts as started (after an agent restart) is not probed for startup
// again.
func (pw *podWorker) addProbes(c *ctr, spec *v1.Container) {
	if pod := pw.probedPod(c, spec); pod != nil {
		pw.w.cfg.Prober.AddContainer(pod, c.ref, c.id, c.obs.StartedAt)
	}
}

// resumeProbes is addProbes for an instance found running after an agent
// restart: its readiness goes on from the verdict the checkpoint kept
// (c.ready), as the kubelet since 1.35 keeps a running container's Ready
// across its own restart (KEP-4781), until the prober's verdict changes
// it. Without a readiness probe the verdict means nothing.
func (pw *podWorker) resumeProbes(c *ctr, spec *v1.Container) {
	if spec == nil || spec.ReadinessProbe == nil {
		c.ready = false
	}
	if pod := pw.probedPod(c, spec); pod != nil {
		pw.w.cfg.Prober.ResumeContainer(pod, c.ref, c.id, c.obs.StartedAt, c.ready)
	}
}

// probedPod is the pod whose probes of c the prober runs: without the
// startup probe of a container that already counts as started. Nil when
// nothing is to be probed.
func (pw *podWorker) probedPod(c *ctr, spec *v1.Container) *model.Pod {
	if pw.w.cfg.Prober == nil || !hasProbes(spec) || pw.phase != Syncing {
		return nil
	}
	pod := pw.pod
	if c.obs.Started && spec.StartupProbe != nil {
		cp := &model.Pod{Pod: pod.Pod.DeepCopy(), Defer: pod.Defer}
		if s := cp.Container(c.ref); s != nil {
			s.StartupProbe = nil
		}
		pod = cp
	}
	return pod
}

// removeProbes stops an instance's probes.
func (pw *podWorker) removeProbes(c *ctr) {
	if pr := pw.w.cfg.Prober; pr != nil && c.id != "" {
		pr.RemoveContainer(pw.uid, c.ref.Name, c.id)
	}
}

// observeProbe applies a probe result: Unhealthy events for failed
// attempts; a startup success starts the container; readiness sets ready;
// a liveness or startup failure is recorded for the planner, which stops
// the container (planner containerStops), to be restarted per the restart
// policy.
func (pw *podWorker) observeProbe(r prober.Result) {
	c := pw.ctrs.byName[r.Container]
	if c == nil || c.id != r.ID || c.obs.State != planner.Running || pw.phase != Syncing {
		return
	}
	if r.Warning != "" {
		// The kubelet's words (pkg/kubelet/prober/prober.go): the
		// attempt succeeded all the same.
		pw.eventf(c.ref.FieldPath(), events.Warning, events.ProbeWarning, "%s probe warning: %s", r.Kind, r.Warning)
	}
	if r.Failed {
		pw.eventf(c.ref.FieldPath(), events.Warning, events.Unhealthy, "%s probe failed: %s", r.Kind, r.Output)
		pw.note(timeline.Note{Kind: timeline.NoteProbeFailed, At: pw.w.cfg.Clock.Now(), Container: c.ref.Name, Attempt: c.obs.Restarts, Detail: r.Kind.String()})
	}
	if !r.Changed {
		return
	}
	switch r.Kind {
	case prober.Startup:
		if r.Healthy {
			c.obs.Started, c.obs.StartedOnce = true, true
			return
		}
		pw.probeFailed(c, planner.StartupProbe)
	case prober.Readiness:
		c.ready = r.Healthy
	case prober.Liveness:
		if !r.Healthy {
			pw.probeFailed(c, planner.LivenessProbe)
		}
	}
}

// probeFailed records that a container's liveness or startup probe failed
// (Observed.ProbeFailed): the planner stops it, with the probe's
// terminationGracePeriodSeconds (else the pod's), and the stop's write-ahead
// marks it ProbeKilled, so that the restart rule holds for it after an
// agent restart too. Its probes stop at once. A container whose stop has
// begun, or whose probe failed already, is left as it is.
func (pw *podWorker) probeFailed(c *ctr, probe planner.Probe) {
	if !c.obs.StopRequestedAt.IsZero() || c.obs.ProbeFailed != 0 {
		return
	}
	c.obs.ProbeFailed, c.obs.ProbeFailedAt = probe, pw.w.cfg.Clock.Now()
	pw.removeProbes(c)
}

// probeKillMessage is the Killing event of a probe kill, in the kubelet's
// words (pkg/kubelet/kuberuntime/kuberuntime_manager.go): it says "will be
// restarted" only when the container will be (planner.Restartable: its own
// restartPolicy and rules, or else the pod's); a sidecar is an init container to the kubelet,
// which does not say it for one.
func (pw *podWorker) probeKillMessage(c *ctr, probe planner.Probe) string {
	kind := strings.ToLower(probe.String())
	if c.ref.Role == model.RoleSidecar {
		return fmt.Sprintf("Init container %s failed %s probe", c.ref.Name, kind)
	}
	msg := fmt.Sprintf("Container %s failed %s probe", c.ref.Name, kind)
	if planner.Restartable(pw.pod, pw.pod.Container(c.ref)) {
		msg += ", will be restarted"
	}
	return msg
}
