package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/crilog"
)

// DefaultLogRotationPeriod is how often the logs of running containers are
// looked at for rotation: the kubelet's containerLogMonitorInterval.
const DefaultLogRotationPeriod = 10 * time.Second

// rotateLoop rotates the logs of the running instances every
// r.rotationPeriod, until Close, as the kubelet's container log manager
// does (pkg/kubelet/logs/container_log_manager.go).
func (r *Runtime) rotateLoop() {
	defer r.wg.Done()
	for {
		t := r.clock.NewTimer(r.rotationPeriod)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		r.rotateLogs()
	}
}

// rotateLogs rotates the log of every running instance that has reached
// the policy's MaxSize. Failures are logged; the next round tries again.
func (r *Runtime) rotateLogs() {
	r.mu.Lock()
	var running []*instance
	for _, in := range r.tracked {
		if in.state == stateRunning {
			running = append(running, in)
		}
	}
	r.mu.Unlock()
	for _, in := range running {
		if r.ctx.Err() != nil {
			return
		}
		if err := r.rotateLog(in); err != nil {
			r.log.Warn("rotate the container log", "pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id, "err", err)
		}
	}
}

// rotateLog rotates in's log once it has reached MaxSize, the kubelet's
// way: the rotated files are tidied first (the leftovers of a rotation cut
// short removed, at most MaxFiles-2 kept, all compressed), then the log is
// renamed to its rotated name and the CRI runtime asked to reopen it
// (ReopenContainerLog), which makes a new file at its path; if the runtime
// cannot, the log is renamed back for the next round. A log that is
// missing (removed by hand) is reopened too. The runtime writes the
// renamed file until it reopens: a follower of the log reads it to its end
// before it goes on in the new one (crilog.ReadLog).
func (r *Runtime) rotateLog(in *instance) error {
	fi, err := os.Stat(in.logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return r.reopenLog(in)
	}
	if err != nil {
		return err
	}
	if fi.Size() < r.logRotation.MaxSize {
		return nil
	}
	rotated := crilog.RotatedName(in.logPath, r.clock.Now())
	if _, err := os.Lstat(rotated); !errors.Is(err, fs.ErrNotExist) {
		return nil // rotated this second already: the next round
	}
	if err := crilog.PruneRotated(in.logPath, r.logRotation.MaxFiles-2, 0); err != nil {
		return err
	}
	if err := os.Rename(in.logPath, rotated); err != nil {
		return fmt.Errorf("rotate the log: %w", err)
	}
	if err := r.reopenLog(in); err != nil {
		if rerr := os.Rename(rotated, in.logPath); rerr != nil {
			r.log.Error("put back a container log the runtime could not reopen; its lines until the next reopen go to the rotated file",
				"container", in.container, "id", in.id, "rotated", rotated, "err", rerr)
		}
		return err
	}
	return nil
}

// reopenLog asks the CRI runtime to reopen in's log at its path.
func (r *Runtime) reopenLog(in *instance) error {
	ctx, cancel := r.call(r.ctx)
	defer cancel()
	if _, err := r.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: in.id}); err != nil {
		return fmt.Errorf("reopen the log of container %s: %w", in.id, err)
	}
	return nil
}
