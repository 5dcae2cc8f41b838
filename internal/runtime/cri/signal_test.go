package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
)

// Every stop signal the model accepts reaches the CRI as itself, real-time
// signals and aliases too, and every signal the CRI knows is one of them:
// none silently becomes the runtime's default (issue 11; the kubelet's
// kuberuntime helpers.go, buildContainerConfigLifecycle, maps each name).
func TestStopSignalReachesTheCRI(t *testing.T) {
	reached := map[runtimeapi.Signal]bool{}
	for _, name := range model.LinuxSignals() {
		got := stopSignal(&v1.Container{Lifecycle: &v1.Lifecycle{StopSignal: ptr.To(name)}})
		if got == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
			t.Errorf("stopSignal %s is the runtime's default", name)
		}
		reached[got] = true
	}
	for v, enum := range runtimeapi.Signal_name {
		if s := runtimeapi.Signal(v); s != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT && !reached[s] {
			t.Errorf("no stop signal name gives %s", enum)
		}
	}
	for name, want := range map[v1.Signal]runtimeapi.Signal{
		v1.SIGRTMINPLUS1: runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1, v1.SIGRTMAXMINUS14: runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14,
		v1.SIGRTMIN: runtimeapi.Signal_SIGNAL_SIGRTMIN, v1.SIGIOT: runtimeapi.Signal_SIGNAL_SIGIOT, v1.SIGPOLL: runtimeapi.Signal_SIGNAL_SIGPOLL,
	} {
		if got := criSignal(name); got != want {
			t.Errorf("criSignal(%s) = %s, want %s", name, got, want)
		}
	}
	if got := stopSignal(&v1.Container{}); got != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		t.Errorf("no stopSignal = %s, want the runtime's default", got)
	}
}
