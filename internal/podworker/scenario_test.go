package podworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/planner/plannertest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// TestScenarios runs the pod worker's scripts, testdata/*.txt (format and
// directives: testdata/README.md), through plannertest's reader. Each file
// runs in a testing/synctest bubble against real Workers, the fake runtime,
// a fake clock and checkpoints in memory. After every directive that acts
// the driver settles: it waits until every goroutine of the bubble is
// blocked (synctest.Wait, no sleeps), delivers the runtime's events one at a
// time and lets the workers' hook goroutines through one at a time, so that
// what a block renders never depends on scheduling. Rewrite the expected
// outputs with go test ./internal/podworker -run TestScenarios -rewrite.
func TestScenarios(t *testing.T) {
	for _, path := range plannertest.Files(t, "testdata/*.txt") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scenario{}
				t.Cleanup(s.end)
				plannertest.RunFile(t, path, s.run)
			})
		})
	}
}

// scenarioUID is the UID of every scenario's pod.
const scenarioUID = types.UID("p")

// scenario is the state of one file: the pod a pod directive declared, the
// machine around it (clock, runtime, checkpoints, events), which outlives
// agent restarts, and the agent's Workers.
type scenario struct {
	pod    *model.Pod
	clk    *clocktesting.FakeClock
	rt     *fake.Runtime
	rec    *events.Recorder
	cps    *scenarioCheckpoints
	prober *scenarioProber // nil when the pod has no probes
	// w is the agent's Workers, nil while the agent is down; stopW ends
	// them as an agent stop does.
	w     *Workers
	stopW context.CancelFunc
	// calls and events count what was rendered already.
	calls, events int
	// allocatable is the node's (Config.Allocatable); others are the
	// other pods of the node (other-pod), by name.
	allocatable v1.ResourceList
	others      map[string]*model.Pod

	mu sync.Mutex
	// held names what blocks until unblock ("setup", "start NAME",
	// "hook CMD", "cleanup"); release is closed by unblock.
	held    map[string]bool
	release chan struct{}
	// failHooks gives the result of the hooks running CMD.
	failHooks map[string]hookResultSpec
	// failList makes the runtime's listing fail; failSetup the pod's
	// setup (PreparePod).
	failList, failSetup bool
	// failConfig names the containers whose configuration cannot be made
	// (fail-config): their starts fail with a ContainerConfigError.
	failConfig map[string]bool
	// gates are the hook goroutines waiting for their turn.
	gates []*gate
}

// hookResultSpec is what a failing hook's command gives.
type hookResultSpec struct {
	code   int
	output string
}

// gate is a hook goroutine waiting for the driver to let it on.
type gate struct {
	key  string
	open chan struct{}
}

// run carries out one block's directives. A directive that acts is
// followed by a settle; what happened since the previous render (calls,
// events, then the state) is rendered before a query's answer and at the
// end of the block.
func (s *scenario) run(b *plannertest.Block) (string, error) {
	var out []string
	acted := false
	flush := func() {
		if acted {
			out = append(out, s.render()...)
			acted = false
		}
	}
	for _, d := range b.Directives {
		if d.Cmd == "pod" {
			if err := s.newPod(d); err != nil {
				return "", err
			}
			continue
		}
		if s.pod == nil {
			return "", d.Errorf("no pod yet")
		}
		if answer, ok, err := s.query(d); ok {
			if err != nil {
				return "", err
			}
			flush()
			out = append(out, answer...)
			continue
		}
		act, err := s.apply(d)
		if err != nil {
			return "", err
		}
		if act {
			s.settle()
			acted = true
		}
	}
	flush()
	return strings.Join(out, "\n"), nil
}

// newPod ends the previous scenario and starts one: the pod, a new machine
// and an agent, with no update sent yet.
func (s *scenario) newPod(d plannertest.Directive) error {
	p, err := plannertest.Pod(d)
	if err != nil {
		return err
	}
	s.end()
	p.UID = scenarioUID
	s.pod = p
	s.clk = clocktesting.NewFakeClock(plannertest.T0)
	s.rt = fake.New(s.clk)
	s.rt.PrepareHook = func(ctx context.Context) error {
		s.mu.Lock()
		fail := s.failSetup
		s.mu.Unlock()
		if fail {
			return errors.New("mount failed")
		}
		_, err := s.hold(ctx, "setup")
		return err
	}
	s.rt.StartHook = func(ctx context.Context, ref model.ContainerRef) error {
		s.mu.Lock()
		failConfig := s.failConfig[ref.Name]
		s.mu.Unlock()
		if failConfig {
			return fmt.Errorf("start container %q: %w", ref.Name, runtime.ConfigErrorf(`configmap "cfg" not found`))
		}
		_, err := s.hold(ctx, "start "+ref.Name)
		return err
	}
	s.rt.CleanupHook = func(ctx context.Context) { _, _ = s.hold(ctx, "cleanup") }
	s.rt.ExecHook = s.execHook
	s.rec = events.NewRecorder(s.clk, 1000)
	s.cps = &scenarioCheckpoints{data: map[types.UID][]byte{}}
	s.prober = nil
	for _, ref := range p.Containers() {
		if hasProbes(p.Container(ref)) {
			s.prober = &scenarioProber{rt: s.rt, ids: map[string]string{}}
		}
	}
	s.calls, s.events = 0, 0
	s.allocatable, s.others = nil, map[string]*model.Pod{}
	s.mu.Lock()
	s.held, s.release, s.failHooks, s.failList, s.failSetup, s.gates = map[string]bool{}, make(chan struct{}), map[string]hookResultSpec{}, false, false, nil
	s.failConfig = map[string]bool{}
	s.mu.Unlock()
	s.startAgent()
	return nil
}

// end stops the agent and releases whatever is held, so that every
// goroutine of the bubble returns.
func (s *scenario) end() {
	if s.pod == nil {
		return
	}
	s.stopAgent(true)
}

// startAgent starts new Workers on the scenario's machine.
func (s *scenario) startAgent() {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{
		Runtime: scenarioRuntime{s.rt, s}, Recorder: s.rec, Clock: s.clk, Planner: planner.DefaultConfig(),
		Logger: slog.New(slog.DiscardHandler), Checkpointer: s.cps, Allocatable: s.allocatable,
	}
	if s.prober != nil {
		cfg.Prober = s.prober
	}
	s.w, s.stopW = New(ctx, cfg), cancel
}

// stopAgent ends the Workers as an agent stop does (their ctx) and waits
// for their goroutines; the runtime's events wait for the next agent.
// release also lets go of everything held.
func (s *scenario) stopAgent(release bool) {
	w := s.w
	if w == nil {
		return
	}
	s.w = nil
	s.stopW()
	if release {
		s.unblock()
	}
	s.settle()
	w.Wait()
}

// settle waits until the bubble is idle: every goroutine but this one is
// blocked, no runtime event waits to be delivered and no hook goroutine
// waits at a gate. Events and gates go one at a time, each followed by a
// wait, so that the order of what they cause is always the same.
func (s *scenario) settle() {
	for {
		synctest.Wait()
		if s.w != nil {
			select {
			case ev := <-s.rt.Events():
				s.w.HandleEvent(ev)
				continue
			default:
			}
		}
		if !s.openGate() {
			return
		}
	}
}

// openGate lets the first hook goroutine waiting at a gate on, in the
// order of the gates' keys; it reports whether there was one.
func (s *scenario) openGate() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.gates) == 0 {
		return false
	}
	first := 0
	for i, g := range s.gates {
		if g.key < s.gates[first].key {
			first = i
		}
	}
	g := s.gates[first]
	s.gates = slices.Delete(s.gates, first, first+1)
	close(g.open)
	return true
}

// waitAtGate blocks a hook goroutine until the driver lets it on. The key
// orders the goroutines waiting together: by the container's place in the
// pod, then by command.
func (s *scenario) waitAtGate(ref model.ContainerRef, cmd []string, stage string) {
	idx := slices.IndexFunc(s.pod.Containers(), func(r model.ContainerRef) bool { return r.Name == ref.Name })
	g := &gate{key: fmt.Sprintf("%03d %s %s", idx, strings.Join(cmd, " "), stage), open: make(chan struct{})}
	s.mu.Lock()
	s.gates = append(s.gates, g)
	s.mu.Unlock()
	<-g.open
}

// hold blocks while what is held, until unblock or ctx ends; it reports
// whether it blocked, and ctx's error when that ended it.
func (s *scenario) hold(ctx context.Context, what string) (bool, error) {
	s.mu.Lock()
	held, release := s.held[what], s.release
	s.mu.Unlock()
	if !held {
		return false, nil
	}
	select {
	case <-release:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// unblock lets go of everything held, and holds nothing more.
func (s *scenario) unblock() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.held)
	close(s.release)
	s.release = make(chan struct{})
}

// execHook is the fake runtime's Exec of a hook: held while the script
// blocks its command (a hook cut off by its context ends with 137), then
// failing as the script says, else succeeding.
func (s *scenario) execHook(ctx context.Context, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	held, err := s.hold(ctx, "hook "+cmd[0])
	if held {
		// What ended the hold (unblock, a deadline, the agent stopping)
		// may have woken other goroutines too: go on in turn.
		s.waitAtGate(ref, cmd, "end")
	}
	if err != nil {
		return nil, 137, err
	}
	s.mu.Lock()
	f, failing := s.failHooks[cmd[0]]
	s.mu.Unlock()
	if failing {
		return []byte(f.output), f.code, nil
	}
	return nil, 0, nil
}

// The scenario's machine implements what the worker needs of it.
var (
	_ runtime.ContainerLister = scenarioRuntime{}
	_ Checkpointer            = (*scenarioCheckpoints)(nil)
	_ Prober                  = (*scenarioProber)(nil)
)

// scenarioRuntime is the fake runtime as the scripts see it: hooks wait
// for their turn before they run, and the listing a restarted worker
// begins with is recorded among the calls, and fails while the script
// says so.
type scenarioRuntime struct {
	*fake.Runtime
	s *scenario
}

func (r scenarioRuntime) Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	r.s.waitAtGate(ref, cmd, "begin")
	return r.Runtime.Exec(ctx, pod, ref, cmd)
}

func (r scenarioRuntime) ListContainers(ctx context.Context, uid types.UID) ([]runtime.ContainerStatus, error) {
	r.s.mu.Lock()
	fail := r.s.failList
	r.s.mu.Unlock()
	if fail {
		r.Note("list failed")
		return nil, errors.New("runtime not ready")
	}
	r.Note("list")
	return r.Runtime.ListContainers(ctx, uid)
}

// scenarioCheckpoints keeps checkpoints in memory; while fail is set every
// save fails, as on a full disk.
type scenarioCheckpoints struct {
	mu     sync.Mutex
	data   map[types.UID][]byte
	fail   bool
	failed int
}

func (c *scenarioCheckpoints) SaveCheckpoint(uid types.UID, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		c.failed++
		return errors.New("disk full")
	}
	c.data[uid] = append([]byte(nil), data...)
	return nil
}

func (c *scenarioCheckpoints) get(uid types.UID) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[uid]
}

// scenarioProber records what the worker asks of the prober among the
// runtime's calls; the script hands results in with probe.
type scenarioProber struct {
	rt  *fake.Runtime
	mu  sync.Mutex
	ids map[string]string // container -> its instance last added
}

func (p *scenarioProber) AddContainer(pod *model.Pod, ref model.ContainerRef, id string, _ time.Time) {
	p.mu.Lock()
	p.ids[ref.Name] = id
	p.mu.Unlock()
	p.rt.Note("prober add %s startup=%t", ref.Name, pod.Container(ref).StartupProbe != nil)
}

// ResumeContainer notes as AddContainer does, with " ready" when the
// instance's readiness probe goes on from ready.
func (p *scenarioProber) ResumeContainer(pod *model.Pod, ref model.ContainerRef, id string, _ time.Time, ready bool) {
	p.mu.Lock()
	p.ids[ref.Name] = id
	p.mu.Unlock()
	suffix := ""
	if ready {
		suffix = " ready"
	}
	p.rt.Note("prober add %s startup=%t%s", ref.Name, pod.Container(ref).StartupProbe != nil, suffix)
}

func (p *scenarioProber) RemoveContainer(_ types.UID, container, _ string) {
	p.rt.Note("prober remove %s", container)
}

func (p *scenarioProber) RemovePod(types.UID) { p.rt.Note("prober remove pod") }

func (p *scenarioProber) id(container string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[container]
}
