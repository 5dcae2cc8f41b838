//go:build linux && arm64

package seccomp

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch of this architecture's native ABI.
const auditArch = unix.AUDIT_ARCH_AARCH64
