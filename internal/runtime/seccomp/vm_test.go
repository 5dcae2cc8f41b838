//go:build linux

package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// A syscallData is what a filter sees of one syscall (struct seccomp_data).
type syscallData struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// native is a syscall of this architecture's native ABI.
func native(nr uint32, args ...uint64) syscallData {
	d := syscallData{arch: auditArch, nr: nr}
	copy(d.args[:], args)
	return d
}

// packet lays d out for x/net/bpf's VM, which loads words big-endian:
// each word goes where the kernel puts it, so the program's offsets are
// the kernel's.
func (d syscallData) packet() []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], d.nr)
	binary.BigEndian.PutUint32(b[offArch:], d.arch)
	for i, a := range d.args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

// newVM loads prog into x/net/bpf's interpreter, which checks its jumps.
func newVM(t testing.TB, prog []unix.SockFilter) *bpf.VM {
	t.Helper()
	raw := make([]bpf.Instruction, len(prog))
	for i, in := range prog {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatalf("load program of %d instructions: %v", len(prog), err)
	}
	return vm
}

// run is the filter's return value (SECCOMP_RET_*) for d.
func run(t testing.TB, vm *bpf.VM, d syscallData) uint32 {
	t.Helper()
	got, err := vm.Run(d.packet())
	if err != nil {
		t.Fatalf("run %+v: %v", d, err)
	}
	return uint32(got)
}

// retName names a return value in failures.
func retName(r uint32) string {
	switch {
	case r == unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case r&^unix.SECCOMP_RET_DATA == unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	case r == unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case r == unix.SECCOMP_RET_KILL_THREAD:
		return "KILL_THREAD"
	}
	return "other"
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)
