package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/capabilities"
)

// Security is what a container's process is restricted to, as a container
// runtime gives it through runc: the user and groups it runs as, the
// capabilities it keeps, no_new_privs, a seccomp filter, a PID namespace of
// its own, and what it sees of the host's filesystem. The process runtime
// makes it from the pod's securityContext; the init helper applies it
// (applyCredentials, restrict, the mount steps of isolation.go).
type Security struct {
	// User, when set, is who the command runs as; nil: the agent's user.
	User *User `json:"user,omitempty"`
	// Capabilities are the names (CAP_CHOWN, ...) of the capabilities the
	// process keeps: its bounding set; its effective and permitted sets
	// once it runs as root (and, as with containerd, none for another
	// user); its inheritable and ambient sets are emptied.
	Capabilities []string `json:"capabilities"`
	// NoNewPrivs sets no_new_privs (allowPrivilegeEscalation: false).
	NoNewPrivs bool `json:"noNewPrivs,omitempty"`
	// Seccomp is the filter installed last, before the command runs:
	// SeccompRuntimeDefault or "" (none, Unconfined).
	Seccomp string `json:"seccomp,omitempty"`
	// PIDNamespace: the container runs in a PID namespace of its own,
	// with a /proc of its own, under the init helper as its PID 1
	// (initproc.go); else in the host's (hostPID).
	PIDNamespace bool `json:"pidNamespace,omitempty"`
	// Devices: /dev is a fresh tmpfs with the container runtimes' few
	// devices (null, zero, full, random, urandom, tty), the host's pts
	// and a /dev/shm of its own, instead of the host's /dev (privileged).
	Devices bool `json:"devices,omitempty"`
	// MaskedPaths are covered (a file with /dev/null, a directory with an
	// empty read-only tmpfs), ReadonlyPaths made read-only, as the OCI
	// spec's linux.maskedPaths and readonlyPaths.
	MaskedPaths   []string `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string `json:"readonlyPaths,omitempty"`
	// Hidden are host paths the container must not see (the agent's
	// state directory, its socket or the socket's directory): each
	// covered as MaskedPaths are, after the volumes were mounted from
	// them.
	Hidden []string `json:"hidden,omitempty"`
	// ReadOnlyRoot makes every mount of the container's view read-only
	// but its volumes, /dev and /proc (readOnlyRootFilesystem).
	ReadOnlyRoot bool `json:"readOnlyRoot,omitempty"`
}

// SeccompRuntimeDefault is Security.Seccomp for the container runtimes'
// default profile.
const SeccompRuntimeDefault = "RuntimeDefault"

// User is a process's user, group and supplementary groups.
type User struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// needsMountNamespace says whether s changes the container's view of the
// filesystem.
func (s *Security) needsMountNamespace() bool {
	return s != nil && (s.PIDNamespace || s.Devices || len(s.MaskedPaths) > 0 || len(s.ReadonlyPaths) > 0 || len(s.Hidden) > 0 || s.ReadOnlyRoot)
}

// capabilityMask is names as a bit mask.
func capabilityMask(names []string) (uint64, error) {
	var mask uint64
	for _, n := range names {
		c, ok := capabilities.Number(n)
		if !ok {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
		mask |= 1 << c
	}
	return mask, nil
}

// lastCap is the kernel's highest capability number.
func lastCap() (int, error) {
	raw, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// restrict applies s's capabilities, no_new_privs and seccomp filter to
// the calling thread, which must be locked to its goroutine and be the one
// that execs the command or forks it: each is the thread's, inherited
// by what it forks and kept across exec. The bounding set is cut first,
// the inheritable and ambient sets emptied (what exec gives root is then
// the bounding set), no_new_privs set, and the filter installed last,
// while the thread still has CAP_SYS_ADMIN.
func restrict(s *Security) error {
	if s == nil {
		return nil
	}
	keep, err := capabilityMask(s.Capabilities)
	if err != nil {
		return err
	}
	if err := dropBounding(keep); err != nil {
		return err
	}
	if err := clearInheritable(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", os.NewSyscallError("prctl", err))
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", os.NewSyscallError("prctl", err))
		}
	}
	return installSeccomp(s)
}

// dropBounding drops from the calling thread's bounding set every
// capability not in keep.
func dropBounding(keep uint64) error {
	last, err := lastCap()
	if err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	for c := 0; c <= last; c++ {
		if c < 64 && keep&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, os.NewSyscallError("prctl", err))
		}
	}
	return nil
}

// clearInheritable empties the calling thread's inheritable set, keeping
// its effective and permitted ones (the helper needs them still).
func clearInheritable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capabilities: %w", os.NewSyscallError("capget", err))
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the inheritable capabilities: %w", os.NewSyscallError("capset", err))
	}
	return nil
}

// setUser makes the whole process (every thread: Go's syscall wrappers
// do that) u, groups first: the init helper, just before it execs the
// command. Leaving root clears the effective and permitted capabilities,
// as for a non-root container.
func setUser(u *User) error {
	if u == nil {
		return nil
	}
	groups := make([]int, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = int(g)
	}
	if err := setgroups(groups); err != nil {
		return fmt.Errorf("set the supplementary groups %v: %w", u.Groups, err)
	}
	if err := setresgid(int(u.GID)); err != nil {
		return fmt.Errorf("set the group %d: %w", u.GID, err)
	}
	if err := setresuid(int(u.UID)); err != nil {
		return fmt.Errorf("set the user %d: %w", u.UID, err)
	}
	return nil
}

func setgroups(gids []int) error { return syscall.Setgroups(gids) }
func setresgid(gid int) error    { return syscall.Setresgid(gid, gid, gid) }
func setresuid(uid int) error    { return syscall.Setresuid(uid, uid, uid) }

// pdeathsig is the calling thread's parent-death signal (0: none).
func pdeathsig() (int, error) {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return 0, fmt.Errorf("parent-death signal: %w", os.NewSyscallError("prctl", err))
	}
	return int(sig), nil
}

// setUserKeepingPdeathsig is setUser, after which the calling thread gets
// its parent-death signal again: a change of credentials clears it, and a
// tied process must still die with its starter.
func setUserKeepingPdeathsig(u *User) error {
	if u == nil {
		return nil
	}
	sig, err := pdeathsig()
	if err != nil {
		return err
	}
	if err := setUser(u); err != nil {
		return err
	}
	if sig == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", os.NewSyscallError("prctl", err))
	}
	return nil
}
