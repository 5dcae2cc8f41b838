package daemon

import (
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/cluster"
)

// A cluster node's runtime is chosen: without one it does not start, and
// the error says what each choice means.
func TestClusterNodeWithoutARuntime(t *testing.T) {
	o := options(t.TempDir())
	o.Runtime.Kind = ""
	// The kubeconfig is absent too: the runtime is checked first, before
	// anything is read or started.
	_, err := NewClusterNode(t.Context(), ClusterOptions{Options: o, Kubeconfig: filepath.Join(t.TempDir(), "absent")})
	if !errors.Is(err, ErrBadOptions) || !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("NewClusterNode = %v, want ErrBadOptions and ErrNoRuntime", err)
	}
	for _, want := range []string{"--runtime: ", "--runtime cri", "--runtime process", "podward.io/runtime=process:NoSchedule"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestDefaultClusterOptionsChooseNoRuntime(t *testing.T) {
	got, want := DefaultClusterOptions(), DefaultOptions()
	if got.Runtime.Kind != "" {
		t.Errorf("runtime %q, want none: a cluster node's is chosen", got.Runtime.Kind)
	}
	if !got.Runtime.PodNetwork || DefaultOptions().Runtime.PodNetwork {
		t.Errorf("pod network %v in cluster mode, %v standalone; want on, off", got.Runtime.PodNetwork, want.Runtime.PodNetwork)
	}
	want.Runtime.Kind, want.Runtime.PodNetwork, want.Runtime.ClusterDomain = "", true, DefaultClusterDomain
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultClusterOptions = %+v, want DefaultOptions but the runtime, the pod network and the cluster domain", got)
	}
}

// A cluster node on CRI without the pod network says that its pods'
// specs are not honoured; with it, or on the process runtime, nothing.
func TestWarnHostNetworkOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		o    RuntimeOptions
		warn bool
	}{
		"cri without the pod network": {RuntimeOptions{Kind: RuntimeCRI}, true},
		"cri with the pod network":    {RuntimeOptions{Kind: RuntimeCRI, PodNetwork: true}, false},
		"process":                     {RuntimeOptions{Kind: RuntimeProcess}, false},
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			warnHostNetworkOnly(tc.o, slog.New(slog.NewTextHandler(&b, nil)))
			if got := strings.Contains(b.String(), "level=WARN") && strings.Contains(b.String(), "--cri-pod-network=false"); got != tc.warn {
				t.Errorf("log %q; want a warning: %v", b.String(), tc.warn)
			}
		})
	}
}

func TestRuntimeTaints(t *testing.T) {
	process := []v1.Taint{cluster.ProcessRuntimeTaint()}
	for kind, want := range map[string]struct{ own, dropped []v1.Taint }{
		RuntimeProcess: {own: process},
		RuntimeCRI:     {dropped: process},
	} {
		own, dropped := runtimeTaints(kind)
		if !reflect.DeepEqual(own, want.own) || !reflect.DeepEqual(dropped, want.dropped) {
			t.Errorf("%s: own %v, dropped %v; want %v, %v", kind, own, dropped, want.own, want.dropped)
		}
	}
	if got := cluster.ProcessRuntimeTaint(); got != (v1.Taint{Key: "podward.io/runtime", Value: "process", Effect: v1.TaintEffectNoSchedule}) {
		t.Errorf("the process runtime's taint is %v", got)
	}
}
