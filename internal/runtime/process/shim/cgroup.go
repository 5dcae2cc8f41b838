package shim

import (
	"fmt"
	"os"
	"strconv"

	"github.com/podward/podward/internal/runtime/exitstatus"
)

// shimOOMScoreAdj is the shim's own oom_score_adj: the kernel's OOM killer
// takes a container's processes before its shim, which must survive to
// record the kill.
const shimOOMScoreAdj = -998

// enterCgroup moves the shim into its pod's cgroup and, as far as it may
// (lowering a score needs CAP_SYS_RESOURCE), out of the OOM killer's way,
// once the container runs and the agent has its start: a move is a
// migration of the whole process, which on v1 waits for an RCU grace
// period per hierarchy, and nothing of the shim's needs to be in the
// pod's cgroup before. A failure is only logged: the container runs.
func (s *supervisor) enterCgroup() {
	if s.spec.OOMScoreAdj != nil {
		if err := setOOMScoreAdj("self", shimOOMScoreAdj); err != nil {
			s.log.Debug("the shim keeps its OOM score", "err", err)
		}
	}
	if s.spec.ShimCgroup != nil {
		if err := s.spec.ShimCgroup.Enter(os.Getpid()); err != nil {
			s.log.Warn("move the shim into its pod's cgroup", "err", err)
		}
	}
}

// scoreContainer gives the container, just forked, its oom_score_adj (what
// it forks from now on inherits it). A failure is only logged: the
// container runs.
func (s *supervisor) scoreContainer(pid int) {
	if s.spec.OOMScoreAdj == nil {
		return
	}
	if err := setOOMScoreAdj(strconv.Itoa(pid), *s.spec.OOMScoreAdj); err != nil {
		s.log.Warn("set the container's OOM score", "err", err)
	}
}

func setOOMScoreAdj(pid string, adj int) error {
	if err := os.WriteFile("/proc/"+pid+"/oom_score_adj", []byte(strconv.Itoa(adj)), 0); err != nil {
		return fmt.Errorf("oom_score_adj: %w", err)
	}
	return nil
}

// killCgroup kills what is left in the container's cgroup once its main
// process exited: also what left its process group, which the group's
// kill misses.
func (s *supervisor) killCgroup() {
	if cg := s.spec.Process.Cgroup; cg != nil {
		if err := cg.Kill(); err != nil {
			s.log.Warn("kill what is left in the container's cgroup", "err", err)
		}
	}
}

// cgroupExit, once nothing of the container is left, makes e OOMKilled
// when the OOM killer killed any process in the container's cgroup (as
// containerd reports it from the cgroup's OOM events). The runtime removes
// the cgroup once it reported the exit.
func (s *supervisor) cgroupExit(e *Exit) {
	cg := s.spec.Process.Cgroup
	if cg == nil {
		return
	}
	n, err := cg.OOMKills()
	switch {
	case err != nil:
		s.log.Warn("read the container's OOM kills", "err", err)
	case n > 0:
		e.Reason = exitstatus.OOMKilled
	}
}
