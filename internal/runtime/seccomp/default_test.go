//go:build linux

package seccomp

import (
	"math/rand/v2"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestRuntimeDefault(t *testing.T) {
	none := compiled(t, nil)
	admin := compiled(t, []string{"CAP_SYS_ADMIN"})
	lower := compiled(t, []string{"sys_admin"})
	boot := compiled(t, []string{"CAP_SYS_BOOT"})
	nsFlags := uint64(unix.CLONE_NEWUSER | unix.CLONE_NEWNS)
	tests := []struct {
		name   string
		filter []unix.SockFilter
		call   syscallData
		want   uint32
	}{
		{"read", none, native(nr(t, "read")), allow},
		{"execve", none, native(nr(t, "execve")), allow},
		{"keyctl is never allowed", admin, native(nr(t, "keyctl")), eperm},
		{"add_key is never allowed", admin, native(nr(t, "add_key")), eperm},
		{"mount without CAP_SYS_ADMIN", none, native(nr(t, "mount")), eperm},
		{"mount with CAP_SYS_ADMIN", admin, native(nr(t, "mount")), allow},
		{"mount with sys_admin", lower, native(nr(t, "mount")), allow},
		{"unshare without CAP_SYS_ADMIN", none, native(nr(t, "unshare"), unix.CLONE_NEWUTS), eperm},
		{"unshare with CAP_SYS_ADMIN", admin, native(nr(t, "unshare"), unix.CLONE_NEWUTS), allow},
		{"reboot without CAP_SYS_BOOT", admin, native(nr(t, "reboot")), eperm},
		{"reboot with CAP_SYS_BOOT", boot, native(nr(t, "reboot")), allow},
		{"clone of a thread", none, native(nr(t, "clone"), unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), allow},
		{"clone of namespaces without CAP_SYS_ADMIN", none, native(nr(t, "clone"), nsFlags), eperm},
		{"clone of namespaces with CAP_SYS_ADMIN", admin, native(nr(t, "clone"), nsFlags), allow},
		{"clone3 without CAP_SYS_ADMIN: ENOSYS", none, native(nr(t, "clone3")), enosys},
		{"clone3 with CAP_SYS_ADMIN", admin, native(nr(t, "clone3")), allow},
		{"personality(PER_LINUX)", none, native(nr(t, "personality"), 0), allow},
		{"personality query", none, native(nr(t, "personality"), 0xffffffff), allow},
		{"personality(PER_SVR4)", none, native(nr(t, "personality"), 0x68), eperm},
		{"personality(PER_LINUX) with a high word", none, native(nr(t, "personality"), 1<<32), eperm},
		{"socket AF_INET", none, native(nr(t, "socket"), unix.AF_INET), allow},
		{"socket AF_UNIX", none, native(nr(t, "socket"), unix.AF_UNIX), allow},
		{"socket AF_NETLINK", none, native(nr(t, "socket"), unix.AF_NETLINK), allow},
		{"socket AF_VSOCK", none, native(nr(t, "socket"), unix.AF_VSOCK), eperm},
		{"bpf", none, native(nr(t, "bpf")), eperm},
		{"x32 read: ENOSYS", none, native(0x40000000 | nr(t, "read")), enosys},
		{"32-bit ABI: ENOSYS", none, syscallData{arch: unix.AUDIT_ARCH_I386, nr: 3}, enosys},
		{"a number above every syscall: ENOSYS", none, native(4000), enosys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, newVM(t, tt.filter), tt.call); got != tt.want {
				t.Errorf("%+v: got %s, want %s", tt.call, retName(got), retName(tt.want))
			}
		})
	}
}

func compiled(t testing.TB, caps []string) []unix.SockFilter {
	t.Helper()
	f, err := RuntimeDefault(caps)
	if err != nil {
		t.Fatal(err)
	}
	return f.prog
}

// TestRuntimeDefaultMatchesProfile runs every syscall number, with
// arguments the profile's conditions turn on and random ones, through the
// compiled filter and through the profile's rules read directly: both
// agree, for a process without capabilities and for one with all.
func TestRuntimeDefaultMatchesProfile(t *testing.T) {
	all := []string{"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_CHROOT", "CAP_SYS_MODULE", "CAP_SYS_PACCT",
		"CAP_SYS_PTRACE", "CAP_SYS_RAWIO", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_SYS_NICE",
		"CAP_SYSLOG", "CAP_SYS_RESOURCE", "CAP_BPF", "CAP_PERFMON", "CAP_DAC_READ_SEARCH", "CAP_NET_ADMIN"}
	for _, caps := range [][]string{nil, all} {
		p, err := defaultProfile(caps)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := compile(p)
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, prog)
		m := newModel(t, p)
		rnd := rand.New(rand.NewPCG(1, 2))
		values := profileValues(p)
		for n := uint32(0); n < m.highest+10; n++ {
			for range 20 {
				d := native(n)
				for i := range d.args {
					d.args[i] = values[rnd.IntN(len(values))]
				}
				if got, want := run(t, vm, d), m.verdict(d); got != want {
					t.Fatalf("caps %v, %+v: filter %s, profile %s", caps, d, retName(got), retName(want))
				}
			}
		}
	}
}

// profileValues are the values the profile compares arguments with, each
// also one off, with a high word, and masked; and some random ones.
func profileValues(p *specs.LinuxSeccomp) []uint64 {
	vs := []uint64{0, 1, 1 << 32, 0xffffffff, 0xffffffffffffffff}
	for _, sc := range p.Syscalls {
		for _, a := range sc.Args {
			for _, v := range []uint64{a.Value, a.ValueTwo} {
				vs = append(vs, v, v+1, v-1, v|1<<40, v|unix.CLONE_VM)
			}
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		vs = append(vs, rnd.Uint64(), uint64(rnd.Uint32()))
	}
	return vs
}

// A model is a profile's rules read as libseccomp and runc apply them,
// with no BPF: the syscalls by number, in profile order.
type model struct {
	def     uint32
	highest uint32
	rules   map[uint32][]specs.LinuxSyscall
}

func newModel(t testing.TB, p *specs.LinuxSeccomp) model {
	def, err := retFor(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		t.Fatal(err)
	}
	m := model{def: def, rules: make(map[uint32][]specs.LinuxSyscall)}
	for _, sc := range p.Syscalls {
		for _, name := range sc.Names {
			if n, ok := lookup(name); ok {
				m.highest = max(m.highest, n)
				m.rules[n] = append(m.rules[n], sc)
			}
		}
	}
	return m
}

// verdict is what the profile says of d: an unconditional rule, else the
// first rule whose conditions all hold, else the default; with this
// package's rule for numbers above the profile's highest.
func (m model) verdict(d syscallData) uint32 {
	rules := m.rules[d.nr]
	for _, sc := range rules {
		if len(sc.Args) == 0 {
			return must(retFor(sc.Action, sc.ErrnoRet))
		}
	}
	for _, sc := range rules {
		if holds(sc.Args, d) {
			return must(retFor(sc.Action, sc.ErrnoRet))
		}
	}
	if d.nr > m.highest {
		return enosys
	}
	return m.def
}

func must(r uint32, err error) uint32 {
	if err != nil {
		panic(err)
	}
	return r
}

func holds(conds []specs.LinuxSeccompArg, d syscallData) bool {
	for _, c := range conds {
		v := d.args[c.Index]
		var ok bool
		switch c.Op {
		case specs.OpEqualTo:
			ok = v == c.Value
		case specs.OpNotEqual:
			ok = v != c.Value
		case specs.OpLessThan:
			ok = v < c.Value
		case specs.OpLessEqual:
			ok = v <= c.Value
		case specs.OpGreaterThan:
			ok = v > c.Value
		case specs.OpGreaterEqual:
			ok = v >= c.Value
		case specs.OpMaskedEqual:
			ok = v&c.Value == c.ValueTwo
		}
		if !ok {
			return false
		}
	}
	return true
}
