package model

import (
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// The table's numbers are this system's: the classic signals are
// package unix's, the real-time ones glibc's SIGRTMIN (34) and SIGRTMAX
// (the kernel's last signal, 64).
func TestSignalNumbersAreLinuxs(t *testing.T) {
	classic := map[v1.Signal]unix.Signal{
		v1.SIGABRT: unix.SIGABRT, v1.SIGALRM: unix.SIGALRM, v1.SIGBUS: unix.SIGBUS, v1.SIGCHLD: unix.SIGCHLD,
		v1.SIGCLD: unix.SIGCLD, v1.SIGCONT: unix.SIGCONT, v1.SIGFPE: unix.SIGFPE, v1.SIGHUP: unix.SIGHUP,
		v1.SIGILL: unix.SIGILL, v1.SIGINT: unix.SIGINT, v1.SIGIO: unix.SIGIO, v1.SIGIOT: unix.SIGIOT,
		v1.SIGKILL: unix.SIGKILL, v1.SIGPIPE: unix.SIGPIPE, v1.SIGPOLL: unix.SIGPOLL, v1.SIGPROF: unix.SIGPROF,
		v1.SIGPWR: unix.SIGPWR, v1.SIGQUIT: unix.SIGQUIT, v1.SIGSEGV: unix.SIGSEGV, v1.SIGSTKFLT: unix.SIGSTKFLT,
		v1.SIGSTOP: unix.SIGSTOP, v1.SIGSYS: unix.SIGSYS, v1.SIGTERM: unix.SIGTERM, v1.SIGTRAP: unix.SIGTRAP,
		v1.SIGTSTP: unix.SIGTSTP, v1.SIGTTIN: unix.SIGTTIN, v1.SIGTTOU: unix.SIGTTOU, v1.SIGURG: unix.SIGURG,
		v1.SIGUSR1: unix.SIGUSR1, v1.SIGUSR2: unix.SIGUSR2, v1.SIGVTALRM: unix.SIGVTALRM, v1.SIGWINCH: unix.SIGWINCH,
		v1.SIGXCPU: unix.SIGXCPU, v1.SIGXFSZ: unix.SIGXFSZ,
	}
	for name, want := range classic {
		if got, _ := SignalNumber(name); got != want {
			t.Errorf("%s = %d, the system's is %d", name, got, want)
		}
	}
	if got, _ := SignalNumber(v1.SIGRTMAX); got != unix.Signal(64) {
		t.Errorf("SIGRTMAX = %d, want 64", got)
	}
}
