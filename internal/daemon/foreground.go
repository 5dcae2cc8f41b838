package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/local"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// Foreground is the agent of `podward run`: a runtime and an agent in
// memory, without a store, whose pods end with the command. The caller
// creates the pods, deletes them and waits for them to terminate; Close
// then releases the runtime and the temporary state directory.
type Foreground struct {
	agent    *agent.Agent
	rt       openRuntime
	stop     context.CancelFunc
	tempRoot string   // the state directory made for this run, removed by Close
	lock     *os.File // the run's lock on its root (lockRunRoot)
	maxPods  int
	// objects are the ConfigMaps and Secrets of the run's file, in memory.
	objects *local.Objects
	// leftovers says what NewForeground cleaned up of earlier runs.
	leftovers []string
	once      sync.Once
}

// NewForeground opens the runtime, with its state under o.Root (a new
// temporary directory when it is ""), and starts the agent; output, when
// set, receives every line the containers write. The agent stops when ctx
// ends, leaving the containers as they are; the process runtime's
// containers die with this process, however it ends. Its errors are the
// state directory's or the runtime's.
//
// Before the agent starts, it removes what earlier runs that were killed
// left: the pods still on o.Root, or the temporary roots no live run holds
// (see leftovers.go); Leftovers says what.
func NewForeground(ctx context.Context, o Options, output Output) (*Foreground, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	rotation, err := o.logRotation()
	if err != nil {
		return nil, err
	}
	sysctls, err := o.sysctls()
	if err != nil {
		return nil, err
	}
	root := o.Root
	tempRoot := ""
	if root == "" {
		dir, err := os.MkdirTemp("", tempRootPattern)
		if err != nil {
			return nil, err
		}
		root, tempRoot = dir, dir
	}
	root, _ = filepath.Abs(root)
	fail := func(err error) (*Foreground, error) {
		if tempRoot != "" {
			_ = os.RemoveAll(tempRoot)
		}
		return nil, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fail(err)
	}
	warnOpenRoot(root, o.logger())
	lock, err := lockRunRoot(root)
	if err != nil {
		return fail(err)
	}

	clk := clock.RealClock{}
	log := o.logger()
	var leftovers []string
	if tempRoot != "" {
		leftovers = cleanStaleRuns(ctx, &o, tempRoot, clk, log)
	}
	f := &Foreground{tempRoot: tempRoot, lock: lock, maxPods: o.MaxPods}
	if f.objects, err = o.openObjects(nil, f.objectChanged); err != nil {
		lock.Close()
		return fail(err)
	}
	allocatable, _ := machineAllocatable(root, o.MaxPods, log)
	rt, err := o.Runtime.open(ctx, root, clk, log, output, true, rotation, allocatable)
	if err != nil {
		lock.Close()
		return fail(err)
	}
	if tempRoot == "" {
		switch n, err := reapPods(ctx, rt); {
		case err != nil:
			leftovers = append(leftovers, fmt.Sprintf("could not clean what an earlier run that was killed left in %s: %v", root, err))
		case n > 0:
			leftovers = append(leftovers, fmt.Sprintf("removed what an earlier run that was killed left in %s (%s)", root, podCount(n)))
		}
	}
	agentCtx, stop := context.WithCancel(ctx)
	f.agent = agent.New(agentCtx, agent.Config{Runtime: rt, Clock: clk, Planner: o.plannerConfig(), Logger: log, KeepTerminatedPodLogs: -1, MaxPods: o.MaxPods, Sysctls: sysctls, Objects: o.Runtime.objects})
	f.rt, f.stop, f.leftovers = rt, stop, leftovers
	return f, nil
}

// ApplyObjects holds the ConfigMaps and Secrets of the run's file (in
// memory: they end with the run) for its pods to read; they are applied
// before the pods are created. Each object is validated again; the error
// names the first one refused.
func (f *Foreground) ApplyObjects(objs []model.Object) error {
	for _, obj := range objs {
		if _, _, err := f.objects.Apply(obj); err != nil {
			return fmt.Errorf("%s %s/%s: %w", obj.Kind(), obj.Meta().Namespace, obj.Meta().Name, err)
		}
	}
	return nil
}

// Leftovers says, one line each, what NewForeground removed (or could not)
// of earlier runs that were killed.
func (f *Foreground) Leftovers() []string { return f.leftovers }

// Watch follows the agent's events from now on; the caller stops the
// watcher.
func (f *Foreground) Watch() *events.Watcher { return f.agent.Recorder().Watch() }

// Admit checks a pod as Create will, without creating it: Kubernetes
// validation and the runtime's own check (the error is an *InvalidError),
// then the node's admission of the pod itself, its sysctls and its OS (a
// *RejectedError: Create would record it rejected, and a run starts nothing
// of a manifest it does not admit whole). The pod must be defaulted
// (model.Default) as Create defaults it.
func (f *Foreground) Admit(pod *model.Pod) error {
	if err := f.agent.Admit(pod); err != nil {
		return err
	}
	return f.agent.PodRejection(pod)
}

// Room is nil when the agent has room for one more pod once it runs
// pending pods more than now, else the refusal (a *RejectedError, reason
// OutOfpods): `podward run` checks the pods of its manifest against
// Options.MaxPods before it creates any. The agent of a run starts empty,
// and Room counts only the pending ones.
func (f *Foreground) Room(pending int) error {
	if pending < f.maxPods {
		return nil
	}
	return agent.OutOfPods(pending, f.maxPods)
}

// Create admits a pod, gives it a UID and starts it; the agent owns pod
// afterwards. A pod whose name is taken is refused.
func (f *Foreground) Create(pod *model.Pod) (types.UID, error) {
	created, err := f.agent.Create(pod)
	if err != nil {
		return "", err
	}
	return created.UID, nil
}

// Delete asks for the termination of a pod: with grace seconds, or the
// pod's own terminationGracePeriodSeconds when grace is nil; reason says
// why, in its events. It returns at once.
func (f *Foreground) Delete(uid types.UID, grace *int64, reason TerminationReason) error {
	return f.agent.Delete(uid, grace, reason)
}

// WaitTerminated waits until the pod is terminated — nothing of it runs —
// or ctx ends.
func (f *Foreground) WaitTerminated(ctx context.Context, uid types.UID) error {
	return f.agent.WaitTerminated(ctx, uid)
}

// Pod returns the pod with its current status (a removed pod with its
// last), a copy owned by the caller.
func (f *Foreground) Pod(uid types.UID) (*v1.Pod, error) {
	p, _, err := f.agent.Get(uid)
	return p, err
}

// Stop stops the agent and waits for its goroutines; the containers are
// left as they are. It is idempotent.
func (f *Foreground) Stop() {
	f.stop()
	f.agent.Wait()
}

// Close stops the agent, closes the runtime and removes the temporary state
// directory. It is idempotent.
func (f *Foreground) Close() {
	f.once.Do(func() {
		f.Stop()
		_ = f.rt.Close()
		if f.tempRoot != "" {
			_ = hostfs.RemoveAllUnmounted(f.tempRoot)
		}
		f.lock.Close()
	})
}
