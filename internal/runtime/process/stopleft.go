package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// stopLeftMargin is what StopLeft waits beyond the longest grace period
// (and the shims' kill delay) for the shims to write their exits and go.
const stopLeftMargin = 5 * time.Second

// LeftStop is what StopLeft did.
type LeftStop struct {
	// Pods and Containers are how many pods had containers running, and
	// how many containers, that were asked to stop.
	Pods, Containers int
	// Left names the containers ("pod UID/container") whose shims still
	// ran when the wait ended; empty when all stopped.
	Left []string
}

// StopLeft stops, each pod in its stop order, the containers that agents
// left running under root (a process runtime's Config.Root) while no agent
// runs there, as an init system that stops them would, but before it
// signals the containers themselves (`podward stop-pods`, for the
// machine's shutdown). It takes the root's lock first, and holds it until
// it returns, so that no agent starts on the root meanwhile; it fails with
// ErrRootInUse while an agent (a Runtime) holds it.
//
// It sends SIGTERM to the shim of every instance that has not exited (a
// shim is a process whose identity, PID and start time and boot, its
// instance recorded, never a reused PID), and each shim stops its container
// in its pod's order within the pod's grace period (shim.Order); the shim
// of an older agent's instance, without an Order, passes the signal on at
// once. It then waits until every shim signalled has exited (so each
// exit is recorded in its instance for the next agent), for at most the
// longest grace period of those instances plus shim.MinKillDelay and a
// margin, or until ctx ends; then it returns, with the containers still
// running in LeftStop.Left. It never starts anything: the defer containers
// of a pod do not run without an agent.
func StopLeft(ctx context.Context, root string) (LeftStop, error) {
	var res LeftStop
	root, err := filepath.Abs(root)
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return res, nil // no agent ever ran there
	}
	lock, err := hostfs.LockRoot(root, "process runtime", ErrRootInUse)
	if err != nil {
		return res, err
	}
	defer lock.Close()

	shims, longest, err := signalLeftShims(filepath.Join(root, "pods"))
	defer func() {
		for _, s := range shims {
			s.proc.Close()
		}
	}()
	if err != nil {
		return res, err
	}
	pods := map[string]bool{}
	for _, s := range shims {
		pods[s.pod] = true
	}
	res.Pods, res.Containers = len(pods), len(shims)

	ctx, cancel := context.WithTimeout(ctx, longest+shim.MinKillDelay+stopLeftMargin)
	defer cancel()
	for _, s := range shims {
		if err := s.proc.Wait(ctx); err != nil {
			res.Left = append(res.Left, s.pod+"/"+s.container)
		}
	}
	return res, nil
}

// leftShim is the shim of one instance StopLeft signalled.
type leftShim struct {
	pod, container string
	proc           *shim.Proc
}

// signalLeftShims sends SIGTERM to the shim of every instance under pods
// that has not exited, and returns them with the longest grace period
// among them. What it signalled is returned even with an error.
func signalLeftShims(pods string) ([]leftShim, time.Duration, error) {
	var shims []leftShim
	var longest time.Duration
	dirs, err := filepath.Glob(filepath.Join(pods, "*", "instances", "*"))
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		st, err := shim.Load(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, shim.ErrCorrupt) {
			continue // never had a shim
		}
		if err != nil {
			return shims, longest, fmt.Errorf("instance %s: %w", dir, err)
		}
		if st.Exit != nil || st.Shim == nil {
			continue
		}
		p, err := shim.OpenProc(*st.Shim)
		if errors.Is(err, shim.ErrGone) {
			continue // died without an exit: the next agent records it
		}
		if err != nil {
			return shims, longest, fmt.Errorf("instance %s: shim: %w", dir, err)
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			p.Close()
			return shims, longest, fmt.Errorf("instance %s: signal its shim: %w", dir, err)
		}
		shims = append(shims, leftShim{pod: string(st.Spec.PodUID), container: st.Spec.Container, proc: p})
		grace := time.Duration(model.DefaultTerminationGracePeriodSeconds) * time.Second
		if o := st.Spec.Order; o != nil {
			grace = time.Duration(o.GracePeriodSeconds) * time.Second
		}
		longest = max(longest, grace)
	}
	return shims, longest, nil
}
