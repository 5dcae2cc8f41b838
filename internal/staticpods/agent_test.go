package staticpods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// reports records ManifestError calls and rings on each.
type reports struct {
	mu   sync.Mutex
	errs map[string][]error
	ch   chan struct{}
}

func (r *reports) ManifestError(file string, err error) {
	r.mu.Lock()
	r.errs[file] = append(r.errs[file], err)
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

func (r *reports) get(file string) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs[file]...)
}

// TestWithAgent runs a Source against a real agent on the fake runtime: a
// file yields a running pod, a file the runtime cannot run is reported and
// changes nothing, and removing the file deletes its pod.
func TestWithAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	agentClock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(agentClock)
	a := agent.New(ctx, agent.Config{Runtime: rt, Clock: agentClock, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})

	dir := filepath.Join(t.TempDir(), "manifests")
	rep := &reports{errs: map[string][]error{}, ch: make(chan struct{}, 1)}
	srcClock := clocktesting.NewFakeClock(agentClock.Now())
	src := New(dir, a, rep, slog.New(slog.DiscardHandler), WithClock(srcClock))
	deferred := make(chan string, 100)
	src.onDeferred = func(path string) {
		select {
		case deferred <- path:
		default:
		}
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		a.Wait()
	})

	waitCtx, stop := context.WithTimeout(ctx, waitTimeout)
	defer stop()
	watch := a.WatchPods(waitCtx, "")
	// next returns the next watch event that matches, or fails.
	next := func(what string, match func(agent.WatchEvent) bool) *v1.Pod {
		t.Helper()
		for {
			select {
			case ev, ok := <-watch:
				if !ok {
					t.Fatalf("timed out waiting for %s", what)
				}
				if match(ev) {
					return ev.Pod
				}
			case <-waitCtx.Done():
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	if err := src.Sync(waitCtx); err != nil { // the directory exists now
		t.Fatal(err)
	}

	path := filepath.Join(dir, "web.yaml")
	if err := os.WriteFile(path, []byte(pod("web", "busybox")), 0o644); err != nil {
		t.Fatal(err)
	}
	running := next("web running", func(ev agent.WatchEvent) bool {
		return ev.Type != "DELETED" && ev.Pod.Name == "web" && ev.Pod.Status.Phase == v1.PodRunning
	})
	if got := running.Annotations[SourceAnnotation]; got != "file:"+path {
		t.Errorf("%s = %q, want file:%s", SourceAnnotation, got, path)
	}

	// A pod the runtime cannot run is reported; the other file's pod is
	// left alone.
	rt.CheckErr = fmt.Errorf("spec.containers[0].image: %w", runtime.ErrUnsupported)
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(pod("bad", "busybox")), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rep.ch:
	case <-waitCtx.Done():
		t.Fatal("the unsupported pod was never reported")
	}
	if errs := rep.get(bad); len(errs) != 1 || !errors.Is(errs[0], runtime.ErrUnsupported) || !errors.Is(errs[0], agent.ErrInvalid) {
		t.Errorf("reports for bad.yaml = %v", errs)
	}
	if _, err := a.GetPod("default", "bad"); err == nil {
		t.Error("the unsupported pod was created")
	}
	rt.CheckErr = nil

	// Removing the file deletes the pod gracefully: its container gets
	// its stop signal and the pod goes away.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// Move the Source's clock past the settle delay each time it puts
	// off the removal, until the pod is gone.
	for gone := false; !gone; {
		select {
		case got := <-deferred:
			if got == path {
				srcClock.Step(DefaultSettleDelay)
			}
		case ev, ok := <-watch:
			if !ok {
				t.Fatal("timed out waiting for web deleted")
			}
			gone = ev.Type == "DELETED" && ev.Pod.UID == running.UID
		case <-waitCtx.Done():
			t.Fatal("timed out waiting for web deleted")
		}
	}
	if calls := strings.Join(rt.Calls(), ","); !strings.Contains(calls, "signal app terminated") {
		t.Errorf("runtime calls = %s, want a graceful stop", calls)
	}
}
