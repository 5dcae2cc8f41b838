package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/runtime"
)

// ErrInvalid wraps a pod that failed validation or cannot run on this
// runtime: bad input, nothing was started.
var ErrInvalid = errors.New("invalid pod")

// ErrNotFound is returned for a pod the agent does not know.
var ErrNotFound = errors.New("pod not found")

// ErrAlreadyExists is returned when creating a pod whose namespace/name is
// taken by a pod that is not terminated.
var ErrAlreadyExists = errors.New("pod already exists")

// Runtime is the container runtime as the agent needs it: what the pod
// workers need, plus admission and the event stream.
type Runtime interface {
	podworker.Runtime
	// Check says whether the runtime can run the pod as written.
	Check(pod *model.Pod) error
	// Events reports container exits.
	Events() <-chan runtime.Event
}

// Config wires an Agent.
type Config struct {
	Runtime  Runtime
	Clock    clock.WithDelayedExecution
	Planner  planner.Config
	Logger   *slog.Logger
	NodeName string
	// EventsPerPod bounds the events kept per pod.
	EventsPerPod int
}

// Agent is one node's pod engine.
type Agent struct {
	cfg      Config
	workers  *podworker.Workers
	recorder *events.Recorder
	log      *slog.Logger

	mu      sync.Mutex
	pods    map[types.UID]*model.Pod
	changed chan struct{} // closed and replaced on every change

	wg sync.WaitGroup
}

// New starts an agent whose goroutines live until ctx is done. Ending ctx
// stops the agent, never a container.
func New(ctx context.Context, cfg Config) *Agent {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "localhost"
	}
	a := &Agent{
		cfg:      cfg,
		recorder: events.NewRecorder(cfg.Clock, cfg.EventsPerPod),
		log:      cfg.Logger,
		pods:     map[types.UID]*model.Pod{},
		changed:  make(chan struct{}),
	}
	a.workers = podworker.New(ctx, podworker.Config{
		Runtime:  cfg.Runtime,
		Recorder: a.recorder,
		Clock:    cfg.Clock,
		Planner:  cfg.Planner,
		Logger:   cfg.Logger,
		OnChange: func(types.UID) { a.notify() },
	})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.workers.Dispatch(ctx, cfg.Runtime.Events())
	}()
	return a
}

// Wait returns when every goroutine of the agent has returned (after the
// ctx given to New is done, or every pod terminated).
func (a *Agent) Wait() {
	a.wg.Wait()
	a.workers.Wait()
}

// Recorder gives access to the events.
func (a *Agent) Recorder() *events.Recorder { return a.recorder }

// Workers gives access to the pod workers' queries.
func (a *Agent) Workers() *podworker.Workers { return a.workers }

func (a *Agent) notify() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// Admit validates a pod for this agent without creating it: Kubernetes
// validation and the runtime's own check. The error wraps ErrInvalid.
func (a *Agent) Admit(pod *model.Pod) error {
	if errs := model.Validate(pod); len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, model.FormatErrors(errs))
	}
	if err := a.cfg.Runtime.Check(pod); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// Create admits a pod, gives it a UID and hands it to a new pod worker. The
// agent owns pod afterwards.
func (a *Agent) Create(pod *model.Pod) (*model.Pod, error) {
	model.Default(pod)
	if err := a.Admit(pod); err != nil {
		return nil, err
	}
	a.mu.Lock()
	for _, p := range a.pods {
		if p.Namespace == pod.Namespace && p.Name == pod.Name && !a.workers.IsPodKnownTerminated(p.UID) {
			a.mu.Unlock()
			return nil, fmt.Errorf("%w: pods %q", ErrAlreadyExists, pod.Name)
		}
	}
	pod.UID = types.UID(uuid.NewString())
	pod.CreationTimestamp = metav1.NewTime(a.cfg.Clock.Now())
	pod.Spec.NodeName = a.cfg.NodeName
	a.pods[pod.UID] = pod
	a.mu.Unlock()
	a.recorder.Eventf(pod, "", events.Normal, "Scheduled", "Successfully assigned %s to %s", pod.Key(), a.cfg.NodeName)
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: pod})
	a.notify()
	return pod, nil
}

// Delete asks for the pod's graceful termination; grace overrides its
// terminationGracePeriodSeconds when set. It returns at once: the
// termination goes on in the pod's worker.
func (a *Agent) Delete(uid types.UID, grace *int64, reason string) error {
	a.mu.Lock()
	pod, ok := a.pods[uid]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: pod, Kill: &podworker.KillOptions{GracePeriodSeconds: grace, Reason: reason}})
	return nil
}

// Get returns the pod with its current status, a copy owned by the caller.
func (a *Agent) Get(uid types.UID) (*v1.Pod, podworker.Phase, error) {
	p, phase, ok := a.workers.PodStatus(uid)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	return p, phase, nil
}

// WaitTerminated waits until the pod is terminated and its worker is done
// with it (content removed), or ctx ends.
func (a *Agent) WaitTerminated(ctx context.Context, uid types.UID) error {
	done := a.workers.Done(uid)
	if done == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	select {
	case <-done:
		if !a.workers.IsPodKnownTerminated(uid) {
			return fmt.Errorf("agent stopped before pod %s terminated", uid)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
