//go:build linux

package seccomp

import (
	"errors"
	"slices"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// nr is the number of a syscall every supported architecture has.
func nr(t testing.TB, name string) uint32 {
	t.Helper()
	n, ok := lookup(name)
	if !ok {
		t.Fatalf("no syscall %q on this architecture", name)
	}
	return n
}

func errno(e unix.Errno) *uint { u := uint(e); return &u }

// opProfile has one rule per operator, each on its own syscall, an
// unconditional allow and an errno, on an EPERM default.
func opProfile() *specs.LinuxSeccomp {
	cond := func(name string, op specs.LinuxSeccompOperator, idx uint, v, v2 uint64) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: idx, Value: v, ValueTwo: v2, Op: op}}}
	}
	const big = 1<<32 | 5 // a value whose high word counts
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActErrno,
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read", "write", "no_such_syscall"}, Action: specs.ActAllow},
			{Names: []string{"getpid"}, Action: specs.ActErrno, ErrnoRet: errno(unix.EACCES)},
			cond("dup", specs.OpEqualTo, 0, big, 0),
			cond("dup3", specs.OpNotEqual, 1, big, 0),
			cond("close", specs.OpLessThan, 0, big, 0),
			cond("fsync", specs.OpLessEqual, 0, big, 0),
			cond("fchdir", specs.OpGreaterThan, 0, big, 0),
			cond("fchmod", specs.OpGreaterEqual, 0, big, 0),
			cond("personality", specs.OpMaskedEqual, 0, 0xff00000000|0xf0, 0x1100000010),
			// Two rules for one syscall: either holds; both conditions of one.
			{Names: []string{"kill"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 1, Op: specs.OpEqualTo}, {Index: 1, Value: 9, Op: specs.OpEqualTo}}},
			cond("kill", specs.OpEqualTo, 0, 2, 0),
		},
	}
}

func TestCompileOperators(t *testing.T) {
	prog, err := compile(opProfile())
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, prog)
	const big = 1<<32 | 5
	tests := []struct {
		name string
		call syscallData
		want uint32
	}{
		{"unconditional allow", native(nr(t, "read")), allow},
		{"second name of a rule", native(nr(t, "write")), allow},
		{"errno of a rule", native(nr(t, "getpid")), unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)},
		{"not named: the default", native(nr(t, "mount")), eperm},
		{"eq holds", native(nr(t, "dup"), big), allow},
		{"eq: low word alone", native(nr(t, "dup"), 5), eperm},
		{"eq: high word alone", native(nr(t, "dup"), 1<<32), eperm},
		{"ne holds on the low word", native(nr(t, "dup3"), 0, big+1), allow},
		{"ne holds on the high word", native(nr(t, "dup3"), 0, 5), allow},
		{"ne fails", native(nr(t, "dup3"), 0, big), eperm},
		{"lt: high word below", native(nr(t, "close"), 0xffffffff), allow},
		{"lt: low word below", native(nr(t, "close"), big-1), allow},
		{"lt: equal", native(nr(t, "close"), big), eperm},
		{"lt: high word above, low below", native(nr(t, "close"), 2<<32), eperm},
		{"le: equal", native(nr(t, "fsync"), big), allow},
		{"le: above", native(nr(t, "fsync"), big+1), eperm},
		{"le: high word above", native(nr(t, "fsync"), 2<<32), eperm},
		{"gt: above", native(nr(t, "fchdir"), big+1), allow},
		{"gt: high word above, low below", native(nr(t, "fchdir"), 2<<32), allow},
		{"gt: equal", native(nr(t, "fchdir"), big), eperm},
		{"gt: high word below, low above", native(nr(t, "fchdir"), 0xffffffff), eperm},
		{"ge: equal", native(nr(t, "fchmod"), big), allow},
		{"ge: below", native(nr(t, "fchmod"), big-1), eperm},
		{"masked eq holds", native(nr(t, "personality"), 0x11000000_1f), allow},
		{"masked eq: unmasked bits are free", native(nr(t, "personality"), 0xaa110000_0015), allow},
		{"masked eq: low word differs", native(nr(t, "personality"), 0x11000000_20), eperm},
		{"masked eq: high word differs", native(nr(t, "personality"), 0x12000000_10), eperm},
		{"first rule: both conditions", native(nr(t, "kill"), 1, 9), allow},
		{"first rule: one condition only", native(nr(t, "kill"), 1, 15), eperm},
		{"second rule", native(nr(t, "kill"), 2, 15), allow},
		{"no rule", native(nr(t, "kill"), 3, 9), eperm},
		{"above every named syscall: ENOSYS", native(1 << 20), enosys},
		{"x32 numbering: ENOSYS", native(0x40000000 | nr(t, "read")), enosys},
		{"another ABI: ENOSYS", syscallData{arch: unix.AUDIT_ARCH_I386, nr: 3}, enosys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, vm, tt.call); got != tt.want {
				t.Errorf("%+v: got %s, want %s", tt.call, retName(got), retName(tt.want))
			}
		})
	}
}

// An unconditional rule beside conditional ones of the same action wins,
// and a profile whose default allows lets through what is above its
// highest syscall (no ENOSYS: nothing there is denied).
func TestCompileUnconditionalWinsAndAllowDefault(t *testing.T) {
	p := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"mount"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}}},
			{Names: []string{"mount"}, Action: specs.ActErrno},
		},
	}
	prog, err := compile(p)
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, prog)
	if got := run(t, vm, native(nr(t, "mount"), 7)); got != eperm {
		t.Errorf("mount: got %s, want the unconditional EPERM", retName(got))
	}
	if got := run(t, vm, native(1<<20)); got != allow {
		t.Errorf("above the profile: got %s, want the default ALLOW", retName(got))
	}
}

func TestCompileRefuses(t *testing.T) {
	tests := map[string]specs.LinuxSeccomp{
		"notify action": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActNotify}}},
		"trace default": {DefaultAction: specs.ActTrace},
		"operator":      {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Op: "SCMP_CMP_FOO"}}}}},
		"flags":         {DefaultAction: specs.ActErrno, Flags: []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagLog}},
		"two actions for one syscall": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: specs.ActAllow}, {Names: []string{"read"}, Action: specs.ActErrno}}},
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := compile(&p); !errors.Is(err, ErrUnsupported) {
				t.Errorf("compile: %v, want ErrUnsupported", err)
			}
		})
	}
	bad := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}}
	if _, err := compile(bad); err == nil {
		t.Error("compile of an argument index 6: no error")
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	f, err := RuntimeDefault(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8*f.Len() {
		t.Errorf("%d bytes for %d instructions", len(b), f.Len())
	}
	var g Filter
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.prog, g.prog) {
		t.Error("decoded program differs from the encoded one")
	}
	for _, n := range []int{0, 7, 8*maxInsns + 8} {
		if err := new(Filter).UnmarshalBinary(make([]byte, n)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%d bytes: %v, want ErrInvalid", n, err)
		}
	}
	if err := new(Filter).Install(); !errors.Is(err, ErrInvalid) {
		t.Errorf("install of an empty filter: %v, want ErrInvalid", err)
	}
}
