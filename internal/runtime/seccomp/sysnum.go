//go:build linux

package seccomp

import (
	"slices"
	"strings"
)

//go:generate go run mksysnum.go

// A sysnum is one syscall of this architecture: its name as the kernel,
// libseccomp and seccomp profiles spell it, and its number.
type sysnum struct {
	name string
	nr   uint32
}

// lookup returns the number of the syscall named name on this
// architecture; ok is false for a name this architecture does not have.
func lookup(name string) (nr uint32, ok bool) {
	i, ok := slices.BinarySearchFunc(sysnums[:], name, func(s sysnum, n string) int {
		return strings.Compare(s.name, n)
	})
	if !ok {
		return 0, false
	}
	return sysnums[i].nr, true
}
