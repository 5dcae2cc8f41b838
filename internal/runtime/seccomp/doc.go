// Package seccomp gives the process runtime the container runtimes'
// default seccomp profile (a pod's seccompProfile: RuntimeDefault) as a
// classic BPF filter that a process installs on itself just before
// execve: RuntimeDefault compiles it for a capability set, Filter.Install
// installs it on the calling thread, and MarshalBinary / UnmarshalBinary
// carry a compiled filter to another process.
//
// # Which profile
//
// The rules are moby's default profile, github.com/moby/profiles/seccomp
// v0.3.0 (its DefaultProfile, as Go data; containerd's default follows
// it), resolved as moby resolves it: its includes and excludes by
// architecture (runtime.GOARCH), by capability (the caps given, standing
// for the bounding set, as containerd passes the container's) and by
// kernel version (uname). That module is pure Go (it imports only
// runtime-spec's types and x/sys); this package compiles its rules
// itself, with no libseccomp and no cgo. Syscall numbers come from
// golang.org/x/sys/unix's SYS_ constants (zsysnum_linux_*.go, generated
// by mksysnum.go: go generate).
//
// # The program
//
//	load arch; not this architecture's native ABI  -> ERRNO(ENOSYS)
//	load nr
//	nr <= hi of segment 1 ? segment 1's code : next
//	...                                           (segments in number order)
//	nr above the profile's highest syscall        -> ERRNO(ENOSYS)
//
// A segment is a run of syscall numbers with one unconditional outcome
// (one return: the rule's action, or the default, ERRNO(EPERM), for the
// numbers the profile does not name), or one syscall with conditional
// rules: each rule's conditions in turn (all must hold; a rule's argument
// compared as an unsigned 64-bit value, high word first, as libseccomp
// compares it), the first rule that holds deciding, the default if none
// does. The default profile makes about 320 instructions in 67 segments
// on amd64. Operators: SCMP_CMP_EQ, NE, LT, LE, GT, GE, MASKED_EQ; actions:
// SCMP_ACT_ALLOW, ERRNO (EPERM unless errnoRet), KILL, KILL_THREAD,
// KILL_PROCESS, TRAP, LOG.
//
// # What it does not do, and where it is stricter than runc
//
// Never more permissive than the profile; stricter in these, each a denial
// the profile's own "unknown syscall" answer (ENOSYS) gives:
//   - Only the native ABI is filtered: the profile also allows x86 and x32
//     on amd64 (and arm on arm64); here their syscalls get ENOSYS, so a
//     32-bit program cannot run under the filter.
//   - Numbers above the highest syscall the profile names get ENOSYS (as
//     runc's stub does, so that a libc falls back), not the profile's
//     EPERM; a profile whose default allows keeps allowing them.
//   - A name this architecture has not (the profile's 32-bit names on
//     amd64) is left out; the default covers it.
//
// Not supported (compile fails with ErrUnsupported): SCMP_ACT_NOTIFY and
// TRACE, profile flags and listeners, and one syscall with rules of
// different actions (the default profile has none of these). Two
// conditions on one argument in one rule are both required (runc makes
// them alternatives): stricter, and the default profile has none. Only
// amd64 and arm64 have tables; elsewhere RuntimeDefault fails with
// ErrUnsupportedArch. Localhost profiles are not read here.
//
// # Imports
//
// A leaf: nothing of podward, no Kubernetes package (the podward-shim
// binary's init helper links it; internal/archtest checks both). Besides
// the standard library: golang.org/x/sys, github.com/moby/profiles/seccomp
// and github.com/opencontainers/runtime-spec/specs-go.
package seccomp
