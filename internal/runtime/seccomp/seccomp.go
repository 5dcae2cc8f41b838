//go:build linux

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	profiles "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// ErrUnsupportedArch is returned by RuntimeDefault on an architecture
// without a syscall table here (all but amd64 and arm64).
var ErrUnsupportedArch = errors.New("seccomp: no syscall table for this architecture")

// ErrInvalid is wrapped by UnmarshalBinary's error for bytes that are no
// filter, and by Install's for an empty Filter.
var ErrInvalid = errors.New("seccomp: invalid filter")

// Filter is a compiled seccomp filter (a classic BPF program), ready to
// install. The zero Filter is empty and cannot be installed. A Filter is
// never changed once made, so it may be shared.
type Filter struct {
	prog []unix.SockFilter
}

// RuntimeDefault compiles the container runtimes' default profile (moby's,
// which containerd's follows; Kubernetes' RuntimeDefault) for this
// machine's architecture and for a process whose capability set, after
// the container's drop and add, is caps. The profile's rules conditional
// on a capability (includes.caps, excludes.caps) follow caps; its rules
// conditional on a kernel version follow the running kernel's. A name may
// be spelled "CAP_SYS_ADMIN" or, as in a pod's securityContext,
// "SYS_ADMIN", in any case.
//
// It reads nothing but uname(2); it may be called on any goroutine, and
// a caller may keep the Filter or marshal it (MarshalBinary).
func RuntimeDefault(caps []string) (*Filter, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedArch, runtime.GOARCH)
	}
	p, err := defaultProfile(caps)
	if err != nil {
		return nil, err
	}
	prog, err := compile(p)
	if err != nil {
		return nil, fmt.Errorf("seccomp: compile default profile: %w", err)
	}
	return &Filter{prog: prog}, nil
}

// defaultProfile is moby's default profile for this architecture, the
// running kernel and caps: the rules RuntimeDefault compiles.
func defaultProfile(caps []string) (*specs.LinuxSeccomp, error) {
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: canonicalCaps(caps)}}}
	p, err := profiles.GetDefaultProfile(spec)
	if err != nil {
		return nil, fmt.Errorf("seccomp: default profile: %w", err)
	}
	return p, nil
}

// canonicalCaps spells every capability as the profile does:
// upper case, with the CAP_ prefix.
func canonicalCaps(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		c = strings.ToUpper(strings.TrimSpace(c))
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

// Len is the number of BPF instructions of f.
func (f *Filter) Len() int { return len(f.prog) }

// Install installs f on the calling thread with seccomp(2)
// (SECCOMP_SET_MODE_FILTER, without SECCOMP_FILTER_FLAG_TSYNC): only this
// thread, and what it execs or clones from then on, is filtered; the
// process's other threads are not. A Go caller must therefore hold the
// thread (runtime.LockOSThread) from before Install until its execve.
//
// The kernel requires that the thread has no_new_privs set
// (prctl(PR_SET_NO_NEW_PRIVS, 1)) or CAP_SYS_ADMIN in its effective set;
// Install sets neither. A filter cannot be removed: installing a second
// one stacks it (the stricter result wins).
func (f *Filter) Install() error {
	if f == nil || len(f.prog) == 0 {
		return fmt.Errorf("install seccomp filter: %w: empty", ErrInvalid)
	}
	prog := unix.SockFprog{Len: uint16(len(f.prog)), Filter: &f.prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(f)
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: %w", errno)
	}
	return nil
}

// insnSize is the size of one instruction in MarshalBinary's encoding.
const insnSize = 8

// MarshalBinary encodes f as struct sock_filter's fields, little-endian,
// 8 bytes an instruction (a []byte field carries it through JSON). It is
// the cheap way to hand a compiled filter to another process.
func (f *Filter) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, len(f.prog)*insnSize)
	for _, in := range f.prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded. It checks the
// length only: the kernel checks the program when it is installed, and
// what it allows is the encoder's business.
func (f *Filter) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || len(b)%insnSize != 0 || len(b)/insnSize > maxInsns {
		return fmt.Errorf("%w: %d bytes", ErrInvalid, len(b))
	}
	prog := make([]unix.SockFilter, 0, len(b)/insnSize)
	for ; len(b) > 0; b = b[insnSize:] {
		prog = append(prog, unix.SockFilter{
			Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:]),
		})
	}
	f.prog = prog
	return nil
}
