package model

import (
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// kubernetesLinuxSignals is every Signal constant of k8s.io/api core/v1
// (the names Kubernetes' validation accepts for a Linux pod) with the
// number a container on glibc's Linux knows it by: aliases are the signal
// they stand for, SIGRTMIN is 34 and SIGRTMAX 64 (see sigRTMin).
var kubernetesLinuxSignals = map[v1.Signal]syscall.Signal{
	v1.SIGABRT: 6, v1.SIGALRM: 14, v1.SIGBUS: 7, v1.SIGCHLD: 17, v1.SIGCLD: 17, v1.SIGCONT: 18,
	v1.SIGFPE: 8, v1.SIGHUP: 1, v1.SIGILL: 4, v1.SIGINT: 2, v1.SIGIO: 29, v1.SIGIOT: 6,
	v1.SIGKILL: 9, v1.SIGPIPE: 13, v1.SIGPOLL: 29, v1.SIGPROF: 27, v1.SIGPWR: 30, v1.SIGQUIT: 3,
	v1.SIGSEGV: 11, v1.SIGSTKFLT: 16, v1.SIGSTOP: 19, v1.SIGSYS: 31, v1.SIGTERM: 15, v1.SIGTRAP: 5,
	v1.SIGTSTP: 20, v1.SIGTTIN: 21, v1.SIGTTOU: 22, v1.SIGURG: 23, v1.SIGUSR1: 10, v1.SIGUSR2: 12,
	v1.SIGVTALRM: 26, v1.SIGWINCH: 28, v1.SIGXCPU: 24, v1.SIGXFSZ: 25,
	v1.SIGRTMIN: 34, v1.SIGRTMINPLUS1: 35, v1.SIGRTMINPLUS2: 36, v1.SIGRTMINPLUS3: 37,
	v1.SIGRTMINPLUS4: 38, v1.SIGRTMINPLUS5: 39, v1.SIGRTMINPLUS6: 40, v1.SIGRTMINPLUS7: 41,
	v1.SIGRTMINPLUS8: 42, v1.SIGRTMINPLUS9: 43, v1.SIGRTMINPLUS10: 44, v1.SIGRTMINPLUS11: 45,
	v1.SIGRTMINPLUS12: 46, v1.SIGRTMINPLUS13: 47, v1.SIGRTMINPLUS14: 48, v1.SIGRTMINPLUS15: 49,
	v1.SIGRTMAXMINUS14: 50, v1.SIGRTMAXMINUS13: 51, v1.SIGRTMAXMINUS12: 52, v1.SIGRTMAXMINUS11: 53,
	v1.SIGRTMAXMINUS10: 54, v1.SIGRTMAXMINUS9: 55, v1.SIGRTMAXMINUS8: 56, v1.SIGRTMAXMINUS7: 57,
	v1.SIGRTMAXMINUS6: 58, v1.SIGRTMAXMINUS5: 59, v1.SIGRTMAXMINUS4: 60, v1.SIGRTMAXMINUS3: 61,
	v1.SIGRTMAXMINUS2: 62, v1.SIGRTMAXMINUS1: 63, v1.SIGRTMAX: 64,
}

// Every stop signal Kubernetes accepts is accepted, and sent as exactly the
// signal it names: no name falls back to SIGTERM (issue 11).
func TestStopSignalsKubernetesLists(t *testing.T) {
	if got, want := len(LinuxSignals()), len(kubernetesLinuxSignals); got != want {
		t.Errorf("LinuxSignals has %d names, Kubernetes %d", got, want)
	}
	for name, want := range kubernetesLinuxSignals {
		if got, ok := SignalNumber(name); !ok || got != want {
			t.Errorf("SignalNumber(%s) = %d, %t; want %d", name, got, ok, want)
		}
		c := &v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{StopSignal: ptr.To(name)}}
		if got, ok := StopSignal(c); !ok || got != want {
			t.Errorf("StopSignal with lifecycle.stopSignal %s = %d, %t; want %d", name, got, ok, want)
		}
		p := minimalPod()
		p.Spec.Containers[0].Lifecycle = c.Lifecycle
		if errs := Validate(p); len(errs) > 0 {
			t.Errorf("stopSignal %s: %s", name, FormatErrors(errs))
		}
	}
}

func TestStopSignalDefault(t *testing.T) {
	for name, c := range map[string]*v1.Container{
		"no container": nil,
		"no lifecycle": {Name: "app"},
		"no signal":    {Name: "app", Lifecycle: &v1.Lifecycle{}},
	} {
		if got, ok := StopSignal(c); !ok || got != syscall.SIGTERM {
			t.Errorf("%s: StopSignal = %v, %t; want SIGTERM", name, got, ok)
		}
	}
	if got, ok := StopSignal(&v1.Container{Lifecycle: &v1.Lifecycle{StopSignal: ptr.To(v1.Signal("SIGNOPE"))}}); ok {
		t.Errorf("StopSignal of an unknown name = %v, ok", got)
	}
}
