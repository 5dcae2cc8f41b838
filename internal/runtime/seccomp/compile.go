//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors of a profile that uses what this
// compiler does not implement (an action, an operator, flags, a listener).
var ErrUnsupported = errors.New("unsupported by podward's seccomp compiler")

// Offsets in struct seccomp_data; an argument's low word comes first on
// the little-endian architectures this package supports.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// maxInsns is BPF_MAXINSNS, the kernel's cap on a filter's length.
const maxInsns = 4096

// retENOSYS is what a syscall of another ABI, or one newer than any the
// profile names, returns: as runc does, so that a libc falls back.
const retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)

// A rule is one of the profile's rules for one syscall: its return value
// (SECCOMP_RET_*) when all its conditions hold; no condition always holds.
type rule struct {
	conds []specs.LinuxSeccompArg
	ret   uint32
}

// A call is the profile's rules for one syscall number, in profile order:
// the first that holds decides, none holding gives the default action.
type call struct {
	nr    uint32
	rules []rule
}

// compile turns p into a BPF program for this architecture (the layout is
// in doc.go). A syscall p names that this architecture has not is left
// out: the default action covers it.
func compile(p *specs.LinuxSeccomp) ([]unix.SockFilter, error) {
	if len(p.Flags) > 0 || p.ListenerPath != "" || p.ListenerMetadata != "" {
		return nil, fmt.Errorf("profile flags or listener: %w", ErrUnsupported)
	}
	def, err := retFor(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("default action: %w", err)
	}
	calls, err := gather(p.Syscalls)
	if err != nil {
		return nil, err
	}
	prog := []unix.SockFilter{
		load(offArch),
		jump(unix.BPF_JEQ, auditArch, 1, 0),
		ret(retENOSYS),
		load(offNr),
	}
	segs, err := layout(calls, def)
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		if len(s.body) > 255 {
			return nil, fmt.Errorf("syscall %d: %d instructions, more than a jump spans: %w", s.hi, len(s.body), ErrUnsupported)
		}
		prog = append(prog, jump(unix.BPF_JGT, s.hi, uint8(len(s.body)), 0))
		prog = append(prog, s.body...)
	}
	tail := retENOSYS
	if def == unix.SECCOMP_RET_ALLOW || def == unix.SECCOMP_RET_LOG {
		tail = def
	}
	prog = append(prog, ret(tail))
	if len(prog) > maxInsns {
		return nil, fmt.Errorf("%d instructions, more than the kernel's %d: %w", len(prog), maxInsns, ErrUnsupported)
	}
	return prog, nil
}

// gather groups the profile's rules by syscall number, in number order.
func gather(syscalls []specs.LinuxSyscall) ([]call, error) {
	byNr := make(map[uint32]*call)
	for _, sc := range syscalls {
		r, err := ruleFor(sc)
		if err != nil {
			return nil, fmt.Errorf("syscalls %v: %w", sc.Names, err)
		}
		for _, name := range sc.Names {
			nr, ok := lookup(name)
			if !ok {
				continue
			}
			c := byNr[nr]
			if c == nil {
				c = &call{nr: nr}
				byNr[nr] = c
			}
			if len(c.rules) > 0 && c.rules[0].ret != r.ret {
				return nil, fmt.Errorf("syscall %s has rules with different actions: %w", name, ErrUnsupported)
			}
			c.rules = append(c.rules, r)
		}
	}
	calls := make([]call, 0, len(byNr))
	for _, c := range byNr {
		calls = append(calls, *c)
	}
	slices.SortFunc(calls, func(a, b call) int { return int(int64(a.nr) - int64(b.nr)) })
	return calls, nil
}

// ruleFor checks one profile entry and returns its rule.
func ruleFor(sc specs.LinuxSyscall) (rule, error) {
	r, err := retFor(sc.Action, sc.ErrnoRet)
	if err != nil {
		return rule{}, err
	}
	for _, a := range sc.Args {
		if a.Index > 5 {
			return rule{}, fmt.Errorf("argument index %d: syscalls have 6", a.Index)
		}
		if _, ok := condCode[a.Op]; !ok {
			return rule{}, fmt.Errorf("operator %q: %w", a.Op, ErrUnsupported)
		}
	}
	return rule{conds: sc.Args, ret: r}, nil
}

// retFor is the SECCOMP_RET_* value of an action; errno, for
// SCMP_ACT_ERRNO, defaults to EPERM as in runc.
func retFor(act specs.LinuxSeccompAction, errno *uint) (uint32, error) {
	switch act {
	case specs.ActAllow:
		return unix.SECCOMP_RET_ALLOW, nil
	case specs.ActErrno:
		e := uint32(unix.EPERM)
		if errno != nil {
			e = uint32(*errno) & unix.SECCOMP_RET_DATA
		}
		return unix.SECCOMP_RET_ERRNO | e, nil
	case specs.ActKill, specs.ActKillThread:
		return unix.SECCOMP_RET_KILL_THREAD, nil
	case specs.ActKillProcess:
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case specs.ActTrap:
		return unix.SECCOMP_RET_TRAP, nil
	case specs.ActLog:
		return unix.SECCOMP_RET_LOG, nil
	}
	return 0, fmt.Errorf("action %q: %w", act, ErrUnsupported)
}
