package podworker

import (
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/planner"
)

// beginRestartAll records a restart of all containers (KEP-5532) that the
// planner found due: the AllContainersRestarting condition turns True and
// the next plans stop every container. It is checkpointed with the stops'
// write-ahead; a crash before that finds the trigger's exit again.
func (pw *podWorker) beginRestartAll(r *planner.RestartAll) {
	pw.restartAll = r
	pw.eventf(pw.ctrs.byName[r.Trigger].ref.FieldPath(), events.Normal, events.RestartAllContainers,
		"Container %s exited with code %d, which its restart rule answers with RestartAllContainers: restarting all containers in place", r.Trigger, r.ExitCode)
	pw.log.Info("restarting all containers", "trigger", r.Trigger, "exitCode", r.ExitCode)
	pw.save()
}

// resetContainers ends a restart of all containers once nothing runs:
// every container that ran counts as not started again (its last instance
// stays as the status's lastState), the trigger keeps backoffSteps for its
// next instance and the others none, and the init containers start over.
// Readiness starts afresh with the new instances.
func (pw *podWorker) resetContainers(backoffSteps int) {
	trigger := pw.restartAll.Trigger
	for _, c := range pw.ctrs.list {
		if c.obs.State != planner.Exited {
			continue
		}
		c.obs.RestartedAll = true
		c.obs.BackoffSteps = 0
		if c.ref.Name == trigger {
			c.obs.BackoffSteps = backoffSteps
		}
		c.ready = false
	}
	pw.restartAll = nil
	pw.log.Info("all containers reset; starting over", "trigger", trigger)
	pw.save()
}
