package model

import (
	"maps"
	"slices"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Real-time signal numbers as a Linux container sees them. The kernel's
// real-time signals are 32 to 64 (_NSIG-1), but a process's SIGRTMIN is
// what its C library says: glibc's __libc_current_sigrtmin() answers 34,
// because its threads implementation reserves 32 and 33 for itself, and
// SIGRTMAX is 64. Go's syscall package has no SIGRTMIN constant, so the
// numbers are written here; they are what `kill -l` prints on glibc
// systems and what runc and containerd use for "SIGRTMIN+n" (moby/sys
// signal). musl reserves 32 to 34 (its SIGRTMIN is 35), so a musl program
// sees SIGRTMIN+n one lower than it names it: the name is resolved as
// glibc does, as Kubernetes' container runtimes do.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// linuxSignalNumbers maps every stop signal name Kubernetes accepts for a
// Linux pod (k8s.io/api core/v1's Signal constants) to the number it is
// sent as. The numbers are Linux's generic ones (x86, arm, arm64, riscv64,
// ppc64le, s390x), written out rather than taken from package syscall so
// that the model builds on any OS; a Linux test checks them against the
// system's. Aliases map to the signal they stand for: SIGIOT is SIGABRT,
// SIGPOLL is SIGIO, SIGCLD is SIGCHLD.
//
// It is the one table of stop signals: Validate accepts exactly its names,
// and the pod worker sends, and the CRI runtime asks for, exactly the
// signal a name stands for (StopSignal).
var linuxSignalNumbers = map[v1.Signal]syscall.Signal{
	v1.SIGHUP: 1, v1.SIGINT: 2, v1.SIGQUIT: 3, v1.SIGILL: 4, v1.SIGTRAP: 5,
	v1.SIGABRT: 6, v1.SIGIOT: 6, v1.SIGBUS: 7, v1.SIGFPE: 8, v1.SIGKILL: 9,
	v1.SIGUSR1: 10, v1.SIGSEGV: 11, v1.SIGUSR2: 12, v1.SIGPIPE: 13, v1.SIGALRM: 14,
	v1.SIGTERM: 15, v1.SIGSTKFLT: 16, v1.SIGCHLD: 17, v1.SIGCLD: 17, v1.SIGCONT: 18,
	v1.SIGSTOP: 19, v1.SIGTSTP: 20, v1.SIGTTIN: 21, v1.SIGTTOU: 22, v1.SIGURG: 23,
	v1.SIGXCPU: 24, v1.SIGXFSZ: 25, v1.SIGVTALRM: 26, v1.SIGPROF: 27, v1.SIGWINCH: 28,
	v1.SIGIO: 29, v1.SIGPOLL: 29, v1.SIGPWR: 30, v1.SIGSYS: 31,

	v1.SIGRTMIN:      sigRTMin,
	v1.SIGRTMINPLUS1: sigRTMin + 1, v1.SIGRTMINPLUS2: sigRTMin + 2, v1.SIGRTMINPLUS3: sigRTMin + 3,
	v1.SIGRTMINPLUS4: sigRTMin + 4, v1.SIGRTMINPLUS5: sigRTMin + 5, v1.SIGRTMINPLUS6: sigRTMin + 6,
	v1.SIGRTMINPLUS7: sigRTMin + 7, v1.SIGRTMINPLUS8: sigRTMin + 8, v1.SIGRTMINPLUS9: sigRTMin + 9,
	v1.SIGRTMINPLUS10: sigRTMin + 10, v1.SIGRTMINPLUS11: sigRTMin + 11, v1.SIGRTMINPLUS12: sigRTMin + 12,
	v1.SIGRTMINPLUS13: sigRTMin + 13, v1.SIGRTMINPLUS14: sigRTMin + 14, v1.SIGRTMINPLUS15: sigRTMin + 15,
	v1.SIGRTMAXMINUS14: sigRTMax - 14, v1.SIGRTMAXMINUS13: sigRTMax - 13, v1.SIGRTMAXMINUS12: sigRTMax - 12,
	v1.SIGRTMAXMINUS11: sigRTMax - 11, v1.SIGRTMAXMINUS10: sigRTMax - 10, v1.SIGRTMAXMINUS9: sigRTMax - 9,
	v1.SIGRTMAXMINUS8: sigRTMax - 8, v1.SIGRTMAXMINUS7: sigRTMax - 7, v1.SIGRTMAXMINUS6: sigRTMax - 6,
	v1.SIGRTMAXMINUS5: sigRTMax - 5, v1.SIGRTMAXMINUS4: sigRTMax - 4, v1.SIGRTMAXMINUS3: sigRTMax - 3,
	v1.SIGRTMAXMINUS2: sigRTMax - 2, v1.SIGRTMAXMINUS1: sigRTMax - 1,
	v1.SIGRTMAX: sigRTMax,
}

// SignalNumber is the Linux signal that the stop signal name stands for;
// ok is false for a name Kubernetes does not accept on Linux.
func SignalNumber(name v1.Signal) (sig syscall.Signal, ok bool) {
	sig, ok = linuxSignalNumbers[name]
	return sig, ok
}

// LinuxSignals lists the stop signal names Kubernetes accepts for a Linux
// pod, sorted. The caller owns the slice.
func LinuxSignals() []v1.Signal {
	return slices.Sorted(maps.Keys(linuxSignalNumbers))
}

// StopSignal is the signal that stops container c: its
// lifecycle.stopSignal, else SIGTERM, as the kubelet sends when neither the
// pod nor the image says otherwise. Validate refuses any other name, so for
// a validated pod it is always exactly the signal the spec names; a name
// it does not know (a pod that skipped validation) gives ok false and
// SIGTERM.
func StopSignal(c *v1.Container) (sig syscall.Signal, ok bool) {
	if c == nil || c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return syscall.SIGTERM, true
	}
	if sig, ok := SignalNumber(*c.Lifecycle.StopSignal); ok {
		return sig, true
	}
	return syscall.SIGTERM, false
}
