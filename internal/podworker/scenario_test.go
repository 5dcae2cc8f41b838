package podworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/podward/podward/internal/prober"
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

	mu sync.Mutex
	// held names what blocks until unblock ("setup", "start NAME",
	// "hook CMD", "cleanup"); release is closed by unblock.
	held    map[string]bool
	release chan struct{}
	// failHooks gives the result of the hooks running CMD.
	failHooks map[string]hookResultSpec
	// failList makes the runtime's listing fail.
	failList bool
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
	s.rt.PrepareHook = func(ctx context.Context) error { _, err := s.hold(ctx, "setup"); return err }
	s.rt.StartHook = func(ctx context.Context, ref model.ContainerRef) error {
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
	s.mu.Lock()
	s.held, s.release, s.failHooks, s.failList, s.gates = map[string]bool{}, make(chan struct{}), map[string]hookResultSpec{}, false, nil
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
		Logger: slog.New(slog.DiscardHandler), Checkpointer: s.cps,
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

func (p *scenarioProber) RemoveContainer(_ types.UID, container, _ string) {
	p.rt.Note("prober remove %s", container)
}

func (p *scenarioProber) RemovePod(types.UID) { p.rt.Note("prober remove pod") }

func (p *scenarioProber) id(container string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[container]
}

// apply carries out a directive that is not a query; it reports whether
// the directive acts (and is to be followed by a settle) rather than only
// setting the machine up.
func (s *scenario) apply(d plannertest.Directive) (bool, error) {
	switch d.Cmd {
	case "ignore-term":
		name, err := s.containerArg(d)
		if err != nil {
			return false, err
		}
		s.rt.IgnoreStopSignal(name)
		return false, nil
	case "block-setup", "block-cleanup", "block-start", "block-hook":
		return false, s.block(d)
	case "fail-hook":
		return false, s.failHook(d)
	case "fail-checkpoints", "fail-list":
		on, err := onOff(d)
		if err != nil {
			return false, err
		}
		if d.Cmd == "fail-list" {
			s.mu.Lock()
			s.failList = on
			s.mu.Unlock()
		} else {
			s.cps.mu.Lock()
			s.cps.fail = on
			s.cps.mu.Unlock()
		}
		return false, nil
	case "stop-agent", "start-agent", "restart":
		return true, s.agent(d)
	}
	return true, s.act(d)
}

// act carries out a directive that changes what the worker sees.
func (s *scenario) act(d plannertest.Directive) error {
	switch d.Cmd {
	case "update", "kill":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		opts := UpdateOptions{Pod: s.pod}
		if d.Cmd == "kill" {
			k, err := killOptions(d)
			if err != nil {
				return err
			}
			opts.Kill = k
		}
		s.w.UpdatePod(opts)
	case "exit", "exit-quietly":
		if len(d.Args) != 2 || d.Args[0].HasVal || d.Args[1].HasVal {
			return d.Errorf("want %s NAME CODE", d.Cmd)
		}
		name := d.Args[0].Key
		code, err := strconv.ParseInt(d.Args[1].Key, 10, 32)
		if err != nil {
			return d.Errorf("exit code: %v", err)
		}
		if !slices.Contains(s.rt.Running(scenarioUID), name) {
			return d.Errorf("%s is not running", name)
		}
		if d.Cmd == "exit" {
			s.rt.Exit(scenarioUID, name, int32(code))
		} else {
			s.rt.ExitQuietly(scenarioUID, name, int32(code))
		}
	case "advance":
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return d.Errorf("want advance DURATION")
		}
		dur, err := time.ParseDuration(d.Args[0].Key)
		if err != nil {
			return d.Errorf("%v", err)
		}
		s.clk.Step(dur)
	case "unblock":
		s.unblock()
	case "reboot":
		s.rt.Reboot()
	case "probe":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		return s.probe(d)
	default:
		return d.Errorf("unknown directive")
	}
	return nil
}

// agent stops the agent, starts it again and restores the pod from its
// checkpoint, or both.
func (s *scenario) agent(d plannertest.Directive) error {
	if d.Cmd != "start-agent" {
		if s.w == nil {
			return d.Errorf("the agent is down already")
		}
		s.stopAgent(false)
	}
	if d.Cmd == "stop-agent" {
		return nil
	}
	if s.w != nil {
		return d.Errorf("the agent runs already")
	}
	data := s.cps.get(scenarioUID)
	if data == nil {
		return d.Errorf("no checkpoint to restore from")
	}
	s.startAgent()
	if err := s.w.Restore(s.pod, data); err != nil {
		return d.Errorf("%v", err)
	}
	return nil
}

// block holds the pod's setup, its clean-up, the starts of a container or
// the hooks running a command, until unblock.
func (s *scenario) block(d plannertest.Directive) error {
	what := strings.TrimPrefix(d.Cmd, "block-")
	switch d.Cmd {
	case "block-start", "block-hook":
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return d.Errorf("want %s NAME", d.Cmd)
		}
		what += " " + d.Args[0].Key
	default:
		if len(d.Args) != 0 {
			return d.Errorf("takes no arguments")
		}
	}
	s.mu.Lock()
	s.held[what] = true
	s.mu.Unlock()
	return nil
}

// failHook reads fail-hook CMD [code=N] [output=WORD]: the hooks running
// CMD exit with N (default 1) and print WORD.
func (s *scenario) failHook(d plannertest.Directive) error {
	if len(d.Args) == 0 || d.Args[0].HasVal {
		return d.Errorf("want fail-hook CMD [code=N] [output=WORD]")
	}
	f := hookResultSpec{code: 1}
	for _, a := range d.Args[1:] {
		switch {
		case a.Key == "code" && a.HasVal:
			n, err := strconv.Atoi(a.Val)
			if err != nil {
				return d.Errorf("code: %v", err)
			}
			f.code = n
		case a.Key == "output" && a.HasVal:
			f.output = a.Val
		default:
			return d.Errorf("unknown argument %q", a.Key)
		}
	}
	s.mu.Lock()
	s.failHooks[d.Args[0].Key] = f
	s.mu.Unlock()
	return nil
}

// probe hands the worker a probe result for a container's latest
// instance: probe NAME startup|readiness|liveness healthy|unhealthy
// [changed]. unhealthy is a failed attempt; changed says the verdict
// flipped (the failure or success threshold was reached).
func (s *scenario) probe(d plannertest.Directive) error {
	if s.prober == nil {
		return d.Errorf("the pod has no probes")
	}
	if len(d.Args) < 3 || len(d.Args) > 4 {
		return d.Errorf("want probe NAME KIND healthy|unhealthy [changed]")
	}
	kinds := map[string]prober.Kind{"startup": prober.Startup, "readiness": prober.Readiness, "liveness": prober.Liveness}
	kind, ok := kinds[d.Args[1].Key]
	if !ok {
		return d.Errorf("kind %q is not startup, readiness or liveness", d.Args[1].Key)
	}
	healthy := d.Args[2].Key == "healthy"
	if !healthy && d.Args[2].Key != "unhealthy" {
		return d.Errorf("%q is not healthy or unhealthy", d.Args[2].Key)
	}
	changed := len(d.Args) == 4 && d.Args[3].Key == "changed"
	if len(d.Args) == 4 && !changed {
		return d.Errorf("%q is not changed", d.Args[3].Key)
	}
	name := d.Args[0].Key
	s.w.HandleProbe(prober.Result{PodUID: scenarioUID, Container: name, ID: s.prober.id(name), Kind: kind,
		Healthy: healthy, Changed: changed, Failed: !healthy, Output: "exit code 1"})
	return nil
}

// query carries out a directive that asks something; ok says whether d is
// one.
func (s *scenario) query(d plannertest.Directive) (out []string, ok bool, err error) {
	switch d.Cmd {
	case "queries":
		return []string{s.queries()}, true, nil
	case "forget":
		if s.w == nil {
			return nil, true, d.Errorf("the agent is down")
		}
		return []string{"Forget " + strconv.FormatBool(s.w.Forget(scenarioUID))}, true, nil
	case "checkpoint":
		out, err := s.checkpoint()
		return out, true, err
	}
	return nil, false, nil
}

// queries lists the Workers' queries that answer true for the pod.
func (s *scenario) queries() string {
	if s.w == nil {
		return "queries: the agent is down"
	}
	var yes []string
	for _, q := range []struct {
		name string
		f    func(types.UID) bool
	}{
		{"IsPodTerminationRequested", s.w.IsPodTerminationRequested},
		{"ShouldPodContainersBeTerminating", s.w.ShouldPodContainersBeTerminating},
		{"CouldHaveRunningContainers", s.w.CouldHaveRunningContainers},
		{"ShouldPodContentBeRemoved", s.w.ShouldPodContentBeRemoved},
		{"IsPodKnownTerminated", s.w.IsPodKnownTerminated},
	} {
		if q.f(scenarioUID) {
			yes = append(yes, q.name)
		}
	}
	if len(yes) == 0 {
		return "queries true: none"
	}
	return "queries true: " + strings.Join(yes, " ")
}

// checkpoint renders the pod's checkpoint as last saved.
func (s *scenario) checkpoint() ([]string, error) {
	s.cps.mu.Lock()
	failed := s.cps.failed
	s.cps.mu.Unlock()
	data := s.cps.get(scenarioUID)
	if data == nil {
		return []string{"checkpoint none"}, nil
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		return nil, err
	}
	head := "checkpoint " + cp.Phase.String()
	if t := cp.Termination; t != nil {
		head += fmt.Sprintf(" reason=%s requested=%s deadline=%s", cp.TermReason, at(t.RequestedAt), at(t.Deadline))
		if t.RunDefer {
			head += " rundefer"
		}
	}
	if failed > 0 {
		head += fmt.Sprintf(" (failed saves: %d)", failed)
	}
	out := []string{head}
	for _, ref := range s.pod.Containers() {
		r, ok := cp.Containers[ref.Name]
		if !ok {
			continue
		}
		o := r.Observed
		state, err := stateFromRecord(o.State)
		if err != nil {
			return nil, fmt.Errorf("checkpoint of %s: %w", ref.Name, err)
		}
		line := fmt.Sprintf("  %s %s", ref.Name, strings.ToLower(state.String()))
		if r.ID != "" {
			line += " id=" + r.ID
		}
		if o.Restarts > 0 {
			line += fmt.Sprintf(" restarts=%d", o.Restarts)
		}
		if p := r.Pending; p != nil {
			line += fmt.Sprintf(" pending(attempt=%d,steps=%d)", p.Attempt, p.BackoffSteps)
		}
		if !o.StopRequestedAt.IsZero() {
			line += " stopping=" + at(o.StopRequestedAt)
		}
		if !o.SignalledAt.IsZero() {
			line += " signalled=" + at(o.SignalledAt)
		}
		if o.Killed {
			line += " killed"
		}
		out = append(out, line)
	}
	return out, nil
}

// render writes what happened since the previous render — the runtime's
// calls, then the pod's events — and the state now.
func (s *scenario) render() []string {
	var out []string
	calls := s.rt.Calls()
	for _, c := range calls[s.calls:] {
		out = append(out, "call "+c)
	}
	s.calls = len(calls)
	evs := s.rec.List(scenarioUID)
	for _, e := range evs[s.events:] {
		out = append(out, fmt.Sprintf("event %s %s: %s", e.Type, e.Reason, e.Message))
	}
	s.events = len(evs)
	return append(out, s.state()...)
}

// state renders the pod as its worker last published it, and the
// containers the runtime runs.
func (s *scenario) state() []string {
	var out []string
	now := "at " + at(s.clk.Now())
	switch pod, phase, ok := s.podStatus(); {
	case s.w == nil:
		out = append(out, now+": the agent is down")
	case !ok:
		out = append(out, now+": no worker")
	default:
		out = append(out, s.podLine(now, pod, phase))
		st := pod.Status
		for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses, (&model.Pod{Pod: pod}).DeferStatuses()) {
			out = append(out, "  "+containerLine(cs))
		}
	}
	running := s.rt.Running(scenarioUID)
	var names []string
	for _, ref := range s.pod.Containers() {
		if slices.Contains(running, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return append(out, "runtime running: "+strings.Join(names, " "))
}

func (s *scenario) podStatus() (*v1.Pod, Phase, bool) {
	if s.w == nil {
		return nil, 0, false
	}
	return s.w.PodStatus(scenarioUID)
}

// podLine is the first line of the state: the worker's phase, the pod's,
// its Ready condition, its deletion and whether its goroutine returned.
func (s *scenario) podLine(now string, pod *v1.Pod, phase Phase) string {
	line := fmt.Sprintf("%s: %s, pod %s", now, phase, pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			line += ", ready"
		}
	}
	if ts := pod.DeletionTimestamp; ts != nil {
		line += ", deleted: deadline " + at(ts.Time)
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			line += fmt.Sprintf(" (grace %ds)", *g)
		}
	}
	select {
	case <-s.w.Done(scenarioUID):
		line += ", worker returned"
	default:
	}
	return line
}

// containerLine renders one container's status: its state (running,
// exited(CODE,REASON) or waiting REASON), then started, ready, its restart
// count and how its previous instance ended.
func containerLine(cs v1.ContainerStatus) string {
	line := cs.Name + " "
	switch st := cs.State; {
	case st.Running != nil:
		line += "running"
		if cs.Started != nil && *cs.Started {
			line += " started"
		}
		if cs.Ready {
			line += " ready"
		}
	case st.Terminated != nil:
		line += terminated(st.Terminated)
	case st.Waiting != nil:
		line += "waiting " + st.Waiting.Reason
		if st.Waiting.Message != "" {
			line += fmt.Sprintf(" %q", st.Waiting.Message)
		}
	default:
		line += "(no state)"
	}
	if cs.RestartCount > 0 {
		line += fmt.Sprintf(" restarts=%d", cs.RestartCount)
	}
	if l := cs.LastTerminationState.Terminated; l != nil {
		line += " last=" + terminated(l)
	}
	return line
}

func terminated(t *v1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exited(%d,%s)", t.ExitCode, t.Reason)
	if t.Message != "" {
		s += fmt.Sprintf(" %q", t.Message)
	}
	return s
}

// at writes a time as its offset from plannertest.T0.
func at(t time.Time) string { return plannertest.FormatTime(t) }

// killOptions reads kill [grace=SECONDS] [reason=WORD]; the reason
// defaults to Deleted.
func killOptions(d plannertest.Directive) (*KillOptions, error) {
	k := &KillOptions{Reason: "Deleted"}
	for _, a := range d.Args {
		switch {
		case a.Key == "grace" && a.HasVal:
			g, err := strconv.ParseInt(a.Val, 10, 64)
			if err != nil {
				return nil, d.Errorf("grace: %v", err)
			}
			k.GracePeriodSeconds = &g
		case a.Key == "reason" && a.HasVal:
			k.Reason = a.Val
		default:
			return nil, d.Errorf("unknown argument %q", a.Key)
		}
	}
	return k, nil
}

// containerArg reads the one argument of a directive: a container of the
// pod.
func (s *scenario) containerArg(d plannertest.Directive) (string, error) {
	if len(d.Args) != 1 || d.Args[0].HasVal {
		return "", d.Errorf("want %s NAME", d.Cmd)
	}
	name := d.Args[0].Key
	for _, ref := range s.pod.Containers() {
		if ref.Name == name {
			return name, nil
		}
	}
	return "", d.Errorf("the pod has no container %q", name)
}

// onOff reads the one argument of a directive: on or off.
func onOff(d plannertest.Directive) (bool, error) {
	if len(d.Args) == 1 && !d.Args[0].HasVal {
		switch d.Args[0].Key {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
	}
	return false, d.Errorf("want %s on|off", d.Cmd)
}
