//go:build linux && !amd64 && !arm64

package seccomp

// auditArch is zero where the package has no syscall table: RuntimeDefault
// fails with ErrUnsupportedArch.
const auditArch = 0

// sysnums is empty: no architecture but amd64 and arm64 has a table.
var sysnums = [...]sysnum{}
