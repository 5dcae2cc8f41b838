package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/process"
	"github.com/podward/podward/internal/store"
)

// TestMain first lets a re-executed test binary be what the process
// runtime started it as (a container's init helper, a shim, a spare
// shim): without it, a spare shim of a test's runtime would run the tests
// again, and each of those its own spares (LEAD: this fork-bombed the
// machine once; keep it).
func TestMain(m *testing.M) {
	process.MaybeRunInit()
	goleak.VerifyTestMain(m)
}

// options are the defaults with a quiet log.
func options(root string) Options {
	o := DefaultOptions()
	o.Root = root
	o.LogOutput = io.Discard
	return o
}

func TestDefaultOptions(t *testing.T) {
	o := DefaultOptions()
	p := planner.DefaultConfig()
	if o.BackoffBase != p.BackoffBase || o.PromptKill != p.PromptKill || o.EventsPerPod != store.DefaultEventsPerPod {
		t.Errorf("defaults %+v, want the planner's and the store's", o)
	}
	if o.MaxPods != 110 {
		t.Errorf("max pods %d, want the kubelet's 110", o.MaxPods)
	}
	if o.Runtime.Kind != RuntimeProcess || o.Runtime.CRIEndpoint != DefaultCRIEndpoint {
		t.Errorf("runtime defaults %+v", o.Runtime)
	}
	o.BackoffBase, o.PromptKill = time.Hour, time.Minute
	cfg := o.plannerConfig()
	want := planner.DefaultConfig()
	want.BackoffBase, want.PromptKill = time.Hour, time.Minute
	if cfg != want {
		t.Errorf("planner config %+v, want %+v", cfg, want)
	}
}

// Each error keeps its message; only the options' own mistakes and
// podward's faults are classified.
func TestErrorClasses(t *testing.T) {
	ctx := context.Background()
	bogus := options(t.TempDir())
	bogus.Runtime.Kind = "bogus"
	const unknown = `--runtime: unknown runtime "bogus" (want process or cri)`

	_, err := NewForeground(ctx, bogus, nil)
	if err == nil || err.Error() != unknown || errors.Is(err, ErrBadOptions) || errors.Is(err, ErrInternal) {
		t.Errorf("foreground with an unknown runtime: %v", err)
	}
	_, err = NewAgent(ctx, AgentOptions{Options: bogus, Socket: filepath.Join(shortDir(t), "pw.sock")})
	if err == nil || err.Error() != unknown || errors.Is(err, ErrBadOptions) || errors.Is(err, ErrInternal) {
		t.Errorf("agent with an unknown runtime: %v", err)
	}
	_, err = NewClusterNode(ctx, ClusterOptions{Options: options(t.TempDir()), Kubeconfig: filepath.Join(t.TempDir(), "absent")})
	if !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), "--kubeconfig: ") {
		t.Errorf("cluster node without a kubeconfig: %v", err)
	}
	badShutdown := options(t.TempDir())
	badShutdown.Shutdown = ShutdownOptions{GracePeriod: 10 * time.Second, CriticalPods: 20 * time.Second}
	_, err = NewAgent(ctx, AgentOptions{Options: badShutdown, Socket: filepath.Join(shortDir(t), "pw.sock")})
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "--shutdown-grace-period-critical-pods 20s must be <= --shutdown-grace-period 10s") {
		t.Errorf("agent with a critical shutdown period longer than the whole: %v", err)
	}
	badShutdown.Shutdown = ShutdownOptions{ByPodPriority: "0=x"}
	_, err = NewAgent(ctx, AgentOptions{Options: badShutdown, Socket: filepath.Join(shortDir(t), "pw.sock")})
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "--shutdown-grace-period-by-pod-priority") {
		t.Errorf("agent with a bad --shutdown-grace-period-by-pod-priority: %v", err)
	}
	if err := internal(errors.New("boom")); !errors.Is(err, ErrInternal) || errors.Is(err, ErrBadOptions) || err.Error() != "boom" {
		t.Errorf("internal: %v", err)
	}
	noPods := options(t.TempDir())
	noPods.MaxPods = 0
	const maxPods = "--max-pods: 0: must be at least 1"
	if _, err := NewForeground(ctx, noPods, nil); !errors.Is(err, ErrBadOptions) || err.Error() != maxPods {
		t.Errorf("foreground with --max-pods 0: %v", err)
	}
	if _, err := NewAgent(ctx, AgentOptions{Options: noPods, Socket: filepath.Join(shortDir(t), "pw.sock")}); !errors.Is(err, ErrBadOptions) || err.Error() != maxPods {
		t.Errorf("agent with --max-pods 0: %v", err)
	}
	if _, err := NewClusterNode(ctx, ClusterOptions{Options: noPods, Kubeconfig: filepath.Join(t.TempDir(), "absent")}); !errors.Is(err, ErrBadOptions) || err.Error() != maxPods {
		t.Errorf("cluster node with --max-pods 0: %v", err)
	}
	// --allowed-unsafe-sysctls: as the kubelet, a sysctl not known to be
	// namespaced, or no sysctl at all, keeps every daemon from starting.
	for _, tc := range []struct{ sysctl, msg string }{
		{"kernel.panic", `--allowed-unsafe-sysctls: the sysctls "kernel.panic" are not known to be namespaced`},
		{"vm.*", `--allowed-unsafe-sysctls: the sysctls "vm." are not known to be namespaced`},
		{"Net.core", `--allowed-unsafe-sysctls: sysctl "Net.core" must have at most 253 characters and match regex`},
	} {
		bad := options(t.TempDir())
		bad.AllowedUnsafeSysctls = []string{"net.core.somaxconn", tc.sysctl}
		if _, err := NewForeground(ctx, bad, nil); !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("foreground with --allowed-unsafe-sysctls %s: %v", tc.sysctl, err)
		}
		if _, err := NewAgent(ctx, AgentOptions{Options: bad, Socket: filepath.Join(shortDir(t), "pw.sock")}); !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("agent with --allowed-unsafe-sysctls %s: %v", tc.sysctl, err)
		}
		if _, err := NewClusterNode(ctx, ClusterOptions{Options: bad, Kubeconfig: filepath.Join(t.TempDir(), "absent")}); !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("cluster node with --allowed-unsafe-sysctls %s: %v", tc.sysctl, err)
		}
	}
}

func TestForeground(t *testing.T) {
	f, err := NewForeground(context.Background(), options(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pods, err := model.Decode([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: app, command: [\"true\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	model.Default(pods[0])
	var invalid *InvalidError
	if err := f.Admit(pods[0]); !errors.As(err, &invalid) || invalid.Problems() != "spec.containers[0].image: Required value" {
		t.Fatalf("admit of a pod without an image: %v", err)
	}
	// A pod for another OS is refused as the node's admission would
	// reject it, whatever the runtime could run.
	pods[0].Spec.Containers[0].Image = "busybox"
	pods[0].Spec.OS = &v1.PodOS{Name: v1.Windows}
	var rejected *RejectedError
	if err := f.Admit(pods[0]); !errors.As(err, &rejected) || rejected.Reason != "PodOSNotSupported" {
		t.Fatalf("admit of a windows pod: %v, want PodOSNotSupported", err)
	}
	f.Close()
	f.Close() // idempotent
}

// A second agent on the same state refuses to start and leaves the
// first's socket alone; Serve ends with its context and removes the
// socket.
func TestAgent(t *testing.T) {
	dir := shortDir(t)
	root, socket := filepath.Join(dir, "state"), filepath.Join(dir, "pw.sock")
	a, err := NewAgent(context.Background(), AgentOptions{Options: options(root), Socket: socket})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Root() != root || a.Socket() != socket {
		t.Errorf("root %q socket %q", a.Root(), a.Socket())
	}
	if _, err := NewAgent(context.Background(), AgentOptions{Options: options(root), Socket: filepath.Join(dir, "other.sock")}); err == nil {
		t.Error("a second agent on the same state started")
	}
	if _, err := NewAgent(context.Background(), AgentOptions{Options: options(filepath.Join(dir, "other")), Socket: socket}); !errors.Is(err, apiserver.ErrSocketInUse) {
		t.Errorf("a second agent on the same socket: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Serve(ctx); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

// shortDir is a temporary directory with a path short enough for a unix
// socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pwnode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
