package staticpods

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// call is one call the fake agent received.
type call struct {
	op     string // "apply" or "delete"
	key    string // namespace/name
	result agent.ApplyResult
	grace  *int64
	pod    *v1.Pod // as applied
}

// report is one ManifestError.
type report struct {
	file string
	err  error
}

type fakePod struct {
	pod  *v1.Pod
	hash string
}

// fakeAgent is an Applier and a Reporter that records every call and keeps
// pods by namespace/name with a hash of what ApplyStatic compares, so that its
// results are Created, Unchanged or Replaced as the agent's would be. It
// rings changed on every call.
type fakeAgent struct {
	mu      sync.Mutex
	pods    map[string]*fakePod
	calls   []call
	reports []report
	changed chan struct{}
	nextUID int
	// terminating pods are being deleted: ApplyStatic finds them unchanged, as
	// the agent does until the old pod is gone.
	terminating map[string]bool
}

var (
	_ Applier  = (*fakeAgent)(nil)
	_ Reporter = (*fakeAgent)(nil)
)

func newFakeAgent() *fakeAgent {
	return &fakeAgent{pods: map[string]*fakePod{}, changed: make(chan struct{}), terminating: map[string]bool{}}
}

// ringLocked wakes every waiter; f.mu must be held.
func (f *fakeAgent) ringLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func specHash(p *model.Pod) string {
	data, err := json.Marshal([]any{p.Spec, p.Defer, p.Labels, p.Annotations})
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (f *fakeAgent) ApplyStatic(p *model.Pod) (*v1.Pod, agent.ApplyResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.ringLocked()
	key := p.Namespace + "/" + p.Name
	if f.terminating[key] {
		f.calls = append(f.calls, call{op: "apply", key: key, result: agent.Unchanged, pod: p.DeepCopy()})
		now := metav1.Now()
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, DeletionTimestamp: &now}}, agent.Unchanged, nil
	}
	hash := specHash(p)
	result := agent.Created
	if cur, ok := f.pods[key]; ok {
		result = agent.Replaced
		if cur.hash == hash {
			result = agent.Unchanged
		}
	}
	if result != agent.Unchanged {
		f.nextUID++
		pod := p.DeepCopy()
		pod.UID = types.UID(fmt.Sprintf("uid-%d", f.nextUID))
		f.pods[key] = &fakePod{pod: pod, hash: hash}
	}
	f.calls = append(f.calls, call{op: "apply", key: key, result: result, pod: p.DeepCopy()})
	return f.pods[key].pod.DeepCopy(), result, nil
}

func (f *fakeAgent) DeletePod(ns, name string, grace *int64) (*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.ringLocked()
	key := ns + "/" + name
	f.calls = append(f.calls, call{op: "delete", key: key, grace: grace})
	cur, ok := f.pods[key]
	if !ok {
		return nil, fmt.Errorf("%w: pods %q", agent.ErrNotFound, name)
	}
	delete(f.pods, key)
	return cur.pod.DeepCopy(), nil
}

func (f *fakeAgent) ListPods(ns string) []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		if ns == "" || p.pod.Namespace == ns {
			out = append(out, p.pod.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (f *fakeAgent) ManifestError(file string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.ringLocked()
	f.reports = append(f.reports, report{file: file, err: err})
}

// seed puts a pod in the fake agent as if it had been applied before.
func (f *fakeAgent) seed(p *model.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUID++
	pod := p.DeepCopy()
	pod.UID = types.UID(fmt.Sprintf("uid-%d", f.nextUID))
	f.pods[p.Namespace+"/"+p.Name] = &fakePod{pod: pod, hash: specHash(p)}
}

// forget drops a pod behind the Source's back (as an API delete would).
func (f *fakeAgent) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pods, key)
}

// setTerminating marks a pod as being deleted, or as gone.
func (f *fakeAgent) setTerminating(key string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminating[key] = on
	if !on {
		delete(f.pods, key)
	}
}

// has reports whether the fake agent holds the pod.
func (f *fakeAgent) has(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pods[key]
	return ok
}

// snapshot returns copies of the calls and reports so far.
func (f *fakeAgent) snapshot() ([]call, []report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...), append([]report(nil), f.reports...)
}

// waitFor waits until cond holds on the calls and reports so far.
func (f *fakeAgent) waitFor(t *testing.T, what string, cond func(calls []call, reports []report) bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond(f.calls, f.reports)
		changed := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			calls, reports := f.snapshot()
			t.Fatalf("timed out waiting for %s\ncalls: %s\nreports: %v", what, describe(calls), reports)
		}
	}
}

func describe(calls []call) string {
	var parts []string
	for _, c := range calls {
		if c.op == "apply" {
			parts = append(parts, fmt.Sprintf("apply %s %s", c.key, c.result))
		} else {
			parts = append(parts, "delete "+c.key)
		}
	}
	return strings.Join(parts, ", ")
}

// count counts the calls of op on key, with the result when not 0.
func count(calls []call, op, key string, result agent.ApplyResult) int {
	n := 0
	for _, c := range calls {
		if c.op == op && c.key == key && (result == 0 || c.result == result) {
			n++
		}
	}
	return n
}

// applied is a waitFor condition: key was applied with result n times.
func applied(key string, result agent.ApplyResult, n int) func([]call, []report) bool {
	return func(calls []call, _ []report) bool { return count(calls, "apply", key, result) == n }
}

// deleted is a waitFor condition: key was deleted n times.
func deleted(key string, n int) func([]call, []report) bool {
	return func(calls []call, _ []report) bool { return count(calls, "delete", key, 0) == n }
}

// all is a waitFor condition: every one of conds holds.
func all(conds ...func([]call, []report) bool) func([]call, []report) bool {
	return func(calls []call, reports []report) bool {
		for _, cond := range conds {
			if !cond(calls, reports) {
				return false
			}
		}
		return true
	}
}

// assertOwnGrace fails the test for every delete among calls that set a
// grace period: a Source deletes pods with their own.
func assertOwnGrace(t *testing.T, calls []call) {
	t.Helper()
	for _, c := range calls {
		if c.op == "delete" && c.grace != nil {
			t.Errorf("delete of %s with grace %d, want nil (the pod's own)", c.key, *c.grace)
		}
	}
}

func reportsFor(reports []report, file string) []report {
	var out []report
	for _, r := range reports {
		if r.file == file {
			out = append(out, r)
		}
	}
	return out
}

// harness runs a Source over a temporary directory with a fake agent and a
// fake clock.
type harness struct {
	t        *testing.T
	dir      string
	fake     *fakeAgent
	clk      *clocktesting.FakeClock
	src      *Source
	deferred chan string
	opts     []Option
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	return &harness{
		t:        t,
		dir:      filepath.Join(t.TempDir(), "manifests"),
		fake:     newFakeAgent(),
		clk:      clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		deferred: make(chan string, 1000),
		opts:     opts,
	}
}

// start runs the Source until the test ends, and waits for its first scan.
func (h *harness) start() {
	h.t.Helper()
	opts := append([]Option{WithClock(h.clk)}, h.opts...)
	h.src = New(h.dir, h.fake, h.fake, slog.New(slog.DiscardHandler), opts...)
	h.src.onDeferred = func(path string) {
		select {
		case h.deferred <- path:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.src.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			h.t.Error("Run did not return after its context ended")
		}
	})
	h.sync()
}

// sync rescans now and waits for the rescan: everything before it has
// been handled.
func (h *harness) sync() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := h.src.Sync(ctx); err != nil {
		h.t.Fatalf("Sync: %v", err)
	}
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(h.path(name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// settleUntil waits until cond holds, moving the clock by step each time
// the Source puts off the processing of name (a removal can be seen as
// several events, each starting the settle delay again).
func (h *harness) settleUntil(name string, step time.Duration, what string, cond func(calls []call, reports []report) bool) {
	h.t.Helper()
	want := h.path(name)
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		h.fake.mu.Lock()
		ok := cond(h.fake.calls, h.fake.reports)
		changed := h.fake.changed
		h.fake.mu.Unlock()
		if ok {
			return
		}
		select {
		case got := <-h.deferred:
			if got == want {
				h.clk.Step(step)
			}
		case <-changed:
		case <-deadline.C:
			calls, reports := h.fake.snapshot()
			h.t.Fatalf("timed out waiting for %s\ncalls: %s\nreports: %v", what, describe(calls), reports)
		}
	}
}

// pod renders a one-container pod manifest.
func pod(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: %s
    command: ["sleep", "100"]
`, name, image)
}

func docs(d ...string) string { return strings.Join(d, "---\n") }

// decoded decodes a one-pod manifest and marks it as coming from path.
func decoded(t *testing.T, manifest, path string) *model.Pod {
	t.Helper()
	pods, err := model.Decode([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if path != "" {
		annotate(pods[0], path)
	}
	return pods[0]
}
