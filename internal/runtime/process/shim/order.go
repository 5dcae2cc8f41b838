package shim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The pod's order when no agent runs.
//
// An instance whose Spec has an Order knows its place in its pod's stop
// order, so that its shim keeps that order on its own when a stop signal
// comes from outside (an init system, pkill, `podward stop-pods`) while no
// agent runs on the root. This file is the whole of it; the rest of the
// shim calls joinPod before the container starts, outside for every
// signal the shim itself receives, and leave once the container is gone.
//
//	outside TERM/INT/QUIT, agent gone (AgentLock free)
//	  │ began = first such signal of the pod (StopBeganFile's mtime)
//	  │ deadline = began + grace period
//	  ├ defer           ─ keeps running ─────────────────────┐
//	  ├ init, main      ─ waits for the pod's defer ones ─┐   │
//	  └ sidecar (index) ─ waits for every init, main and  │   │
//	                      defer one, and every sidecar    │   │
//	                      of a higher index ─────────────┤   │
//	                                    its stop signal ◀┘   │
//	                          deadline: its stop signal ◀────┘ (if not sent yet)
//	  max(deadline, signal + MinKillDelay): SIGKILL to what is left
//
// Waiting is a blocking flock on the lock files of those waited for: each
// shim holds an exclusive flock on its own (in Order.PodDir) from before
// its container starts until its container's process group is gone, and
// the kernel drops it when the shim dies, even by SIGKILL. Nothing polls,
// and nothing waits on a write: a shim that cannot create its lock file
// (a full disk) is not waited for, and one that cannot record the pod's
// first signal counts the grace period from its own.

// The files of a pod's order directory (Order.PodDir).
const (
	// StopBeganFile is created by the first shim of the pod that gets a
	// stop signal from outside with no agent running; its modification
	// time is when, the start of the pod's grace period for every shim
	// of the pod. The runtime removes it whenever it starts a container
	// of the pod: that stop is over.
	StopBeganFile = "stop-began"
	// lockSuffix ends each instance's lock file: ROLE.INDEX.ID.lock.
	lockSuffix = ".lock"
)

// MinKillDelay is the least time between a container's stop signal and
// its SIGKILL in an ordered stop: the agent's minimum too (docs/lifecycle.md,
// Termination, step 6), as the kubelet's minimumGracePeriodInSeconds.
const MinKillDelay = 2 * time.Second

// Role is a container's part in its pod's stop order. It is written in
// spec.json as its name.
type Role int

// Roles start at one so that the zero value is never a valid role.
const (
	RoleInit Role = iota + 1
	RoleSidecar
	RoleMain
	RoleDefer
)

var roleNames = map[Role]string{RoleInit: "init", RoleSidecar: "sidecar", RoleMain: "main", RoleDefer: "defer"}

func (r Role) String() string {
	if s, ok := roleNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText writes the role's name; an unknown role is an error.
func (r Role) MarshalText() ([]byte, error) {
	if s, ok := roleNames[r]; ok {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("unknown role %d", int(r))
}

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	for role, s := range roleNames {
		if s == string(b) {
			*r = role
			return nil
		}
	}
	return fmt.Errorf("unknown role %q", b)
}

// Order is an instance's place in its pod's stop order (Spec.Order), for
// the stop its shim makes on its own when no agent runs. The runtime
// writes the same Order, but for the role and index, in every instance of
// a pod.
type Order struct {
	// Role is the container's part in the pod's lifecycle.
	Role Role `json:"role"`
	// Index is the container's position in the pod's start order (init
	// containers and sidecars as declared, then the regular containers,
	// then the defer containers), as the CRI runtime's podward.io/index
	// label: the sidecars stop in the reverse of it.
	Index int `json:"index"`
	// GracePeriodSeconds is the pod's terminationGracePeriodSeconds.
	GracePeriodSeconds int64 `json:"gracePeriodSeconds"`
	// StopSignal is the signal that stops the container (its
	// lifecycle.stopSignal, else SIGTERM).
	StopSignal syscall.Signal `json:"stopSignal"`
	// PodDir is the directory the pod's shims share: their lock files and
	// StopBeganFile. The runtime creates it.
	PodDir string `json:"podDir"`
	// AgentLock is a file the agent on the root holds an exclusive flock
	// on while it runs (HoldAgentLock): a shim that can take a shared one
	// knows that no agent runs.
	AgentLock string `json:"agentLock"`
}

// HoldAgentLock opens path (creating it) and takes an exclusive flock on
// it, which the caller holds, by keeping the file open, for as long as it
// is the agent: shims do not order a stop meanwhile. The caller must be
// the only agent on the root (it holds the root's own lock). It may wait a
// moment for shims that are checking the lock.
func HoldAgentLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

// ResetStop forgets the pod's last ordered stop (StopBeganFile in podDir),
// so that the next one counts its grace period from its own first signal.
func ResetStop(podDir string) error {
	err := os.Remove(filepath.Join(podDir, StopBeganFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// agentRuns says whether an agent holds the lock at path. It errs on the
// side of an agent: only a lock it could take itself says there is none.
// The lock it takes is shared, so that the shims of a pod all signalled at
// once do not see each other as an agent.
func agentRuns(path string) bool {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close() // releases the lock taken below
	return flock(f, unix.LOCK_SH|unix.LOCK_NB) != nil
}

// isStopRequest says whether a signal the shim gets from outside asks to
// stop the container: what init systems and users send to stop a process.
// The others (HUP, USR1, USR2: reloads, log reopening) are always passed on
// as they are.
func isStopRequest(sig syscall.Signal) bool {
	return sig == unix.SIGTERM || sig == unix.SIGINT || sig == unix.SIGQUIT
}

// podOrder is a shim's side of its pod's order.
type podOrder struct {
	Order
	id   string
	lock *os.File // nil when the lock file could not be made
}

// lockName is the name of the lock file of instance id.
func lockName(role Role, index int, id string) string {
	return role.String() + "." + strconv.Itoa(index) + "." + id + lockSuffix
}

// parseLockName reads a lock file's name; ok is false for anything else.
func parseLockName(name string) (role Role, index int, ok bool) {
	parts := strings.SplitN(strings.TrimSuffix(name, lockSuffix), ".", 3)
	if !strings.HasSuffix(name, lockSuffix) || len(parts) != 3 {
		return 0, 0, false
	}
	if err := role.UnmarshalText([]byte(parts[0])); err != nil {
		return 0, 0, false
	}
	index, err := strconv.Atoi(parts[1])
	return role, index, err == nil
}

// waitsFor says whether a container of role and index stops only once
// one of other and otherIndex has exited: the mains and init containers
// after the defer containers, a sidecar after every container that is no
// sidecar and every sidecar started after it (docs/lifecycle.md,
// Termination).
func waitsFor(role Role, index int, other Role, otherIndex int) bool {
	switch role {
	case RoleInit, RoleMain:
		return other == RoleDefer
	case RoleSidecar:
		return other != RoleSidecar || otherIndex > index
	default:
		return false
	}
}

// joinPod takes the instance's place in its pod's order: its lock file,
// held until leave. It returns nil when spec has no Order (a spec of an
// older agent: signals are passed on at once). A lock file that cannot be
// made is logged and leaves the others not waiting for this container.
func (s *supervisor) joinPod(spec *Spec) *podOrder {
	if spec.Order == nil {
		return nil
	}
	o := &podOrder{Order: *spec.Order, id: spec.ID}
	path := filepath.Join(o.PodDir, lockName(o.Role, o.Index, o.id))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		if err = flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
		}
	}
	if err != nil {
		s.log.Warn("cannot take this container's place in its pod's stop order: without an agent, the others will not wait for it", "err", err)
		return o
	}
	o.lock = f
	return o
}

// leave gives the instance's place up once its container is gone: those
// waiting for it go on. It is idempotent.
func (o *podOrder) leave() {
	if o == nil || o.lock == nil {
		return
	}
	// Removed first, so that nobody who lists the directory later opens it.
	_ = os.Remove(o.lock.Name())
	o.lock.Close()
	o.lock = nil
}

// outside handles a signal the shim itself got: not from the agent, which
// signals through the control FIFO. A stop request while no agent runs
// starts the ordered stop, once; any other signal, or any signal while an
// agent runs (it is in charge of the pod, and restarts what exits), goes
// to the container at once, as it always did.
func (s *supervisor) outside(sig syscall.Signal) {
	o := s.order
	if o == nil || !isStopRequest(sig) || agentRuns(o.AgentLock) {
		s.signal(sig)
		return
	}
	s.stopOnce.Do(func() {
		go s.stopInOrder(o, sig)
	})
}

// stopInOrder is the ordered stop of the package comment, from the first
// stop request sig.
func (s *supervisor) stopInOrder(o *podOrder, sig syscall.Signal) {
	now := s.clock.Now()
	began := o.began(now)
	deadline := began.Add(time.Duration(o.GracePeriodSeconds) * time.Second)
	s.log.Info("stop signal from outside and no agent: stopping in the pod's order",
		"signal", sig, "role", o.Role, "index", o.Index, "deadline", deadline.Format(time.RFC3339Nano))

	released := make(chan struct{})
	if o.Role != RoleDefer {
		// Not stoppable: it ends when the process does, and with the
		// flocks it holds in the kernel.
		go func() {
			o.waitTurn(s.log.Warn)
			close(released)
		}()
	}
	turn := s.clock.NewTimer(deadline.Sub(now))
	defer turn.Stop()
	select {
	case <-released:
	case <-turn.C():
		s.log.Warn("the pod's grace period is over: stop signal without waiting for the turn any more")
	case <-s.exited:
		return
	}
	sig = o.StopSignal
	if sig <= 0 {
		sig = unix.SIGTERM // a spec without one: the kubelet's default
	}
	signalled := s.clock.Now()
	s.signal(sig)
	s.log.Info("sent the stop signal", "signal", sig)

	killAt := deadline
	if earliest := signalled.Add(MinKillDelay); earliest.After(killAt) {
		killAt = earliest
	}
	kill := s.clock.NewTimer(killAt.Sub(s.clock.Now()))
	defer kill.Stop()
	select {
	case <-kill.C():
		s.log.Warn("the pod's grace period is over: killing the container")
		s.signal(unix.SIGKILL)
	case <-s.exited:
	}
}

// began is when the pod's ordered stop began: the time StopBeganFile was
// made, by this shim now or by an earlier one of the pod. When it can be
// neither made nor read, the stop began now, for this shim.
func (o *podOrder) began(now time.Time) time.Time {
	path := filepath.Join(o.PodDir, StopBeganFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrExist):
		return now
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return now
	}
	return time.Unix(st.Mtim.Unix())
}

// waitTurn returns once every instance of the pod that this one waits for
// (waitsFor) has left. An instance whose lock file is gone, or not locked,
// has left. warn is told of lock files it cannot wait on, which it skips.
func (o *podOrder) waitTurn(warn func(msg string, args ...any)) {
	entries, err := os.ReadDir(o.PodDir)
	if err != nil {
		warn("cannot list the pod's stop order: not waiting for the others", "err", err)
		return
	}
	mine := lockName(o.Role, o.Index, o.id)
	for _, e := range entries {
		role, index, ok := parseLockName(e.Name())
		if !ok || e.Name() == mine || !waitsFor(o.Role, o.Index, role, index) {
			continue
		}
		f, err := os.Open(filepath.Join(o.PodDir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // it left meanwhile
		}
		if err == nil {
			err = flock(f, unix.LOCK_SH)
			f.Close()
		}
		if err != nil {
			warn("cannot wait for a container of the pod: not waiting for it", "lock", e.Name(), "err", err)
		}
	}
}

// flock is flock(2) on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return ferr
}
