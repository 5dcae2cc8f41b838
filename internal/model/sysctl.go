package model

import (
	"regexp"
	"strings"
)

// The rules of sysctl names that Kubernetes applies: how a name written
// with slashes is read, which kernel namespace a sysctl belongs to, and
// what an allowlist pattern looks like (k8s.io/component-helpers
// node/util/sysctl, and pkg/apis/policy/validation, 1.37). The kubelet's
// admission (the agent's) and the runtimes share them.

// NormalizeSysctlName is name with dots as its separators, as the kubelet
// reads it (NormalizeName): a name whose first separator is a slash
// ("net/ipv4/conf/eno2.100/rp_filter", as sysctl.d(5) writes it) has its
// slashes and dots swapped ("net.ipv4.conf.eno2/100.rp_filter"); any other
// name is returned as it is.
func NormalizeSysctlName(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// SysctlNamespace is the Linux namespace that isolates a sysctl, in the
// kubelet's words ("IPC", "Net", "UTS", "User"); "" when the sysctl is not
// known to be namespaced (it is the whole machine's).
type SysctlNamespace string

// The namespaces of sysctls.
const (
	SysctlIPC  SysctlNamespace = "IPC"
	SysctlNet  SysctlNamespace = "Net"
	SysctlUTS  SysctlNamespace = "UTS"
	SysctlUser SysctlNamespace = "User"
)

// sysctlNamespaces are the sysctls namespaced by name; "kernel.shm" and
// "kernel.msg" stand for the prefixes of patterns (kernel.shm*).
var sysctlNamespaces = map[string]SysctlNamespace{
	"kernel.domainname":      SysctlUTS,
	"kernel.sem":             SysctlIPC,
	"kernel.shmall":          SysctlIPC,
	"kernel.shmmax":          SysctlIPC,
	"kernel.shmmni":          SysctlIPC,
	"kernel.shm_rmid_forced": SysctlIPC,
	"kernel.shm":             SysctlIPC,
	"kernel.msgmax":          SysctlIPC,
	"kernel.msgmnb":          SysctlIPC,
	"kernel.msgmni":          SysctlIPC,
	"kernel.msg":             SysctlIPC,
}

// sysctlNamespacePrefixes are the trees of sysctls namespaced as a whole:
// a name below "net." is the network namespace's, and so on.
var sysctlNamespacePrefixes = map[string]SysctlNamespace{
	"net":       SysctlNet,
	"fs.mqueue": SysctlIPC,
	"user":      SysctlUser,
}

// SysctlNamespaceOf is the namespace of a sysctl, or of a pattern ending
// in "*" (of the names it stands for), normalized (NormalizeSysctlName).
// It returns the name, or the pattern's part before its "*", normalized,
// and whether it was a pattern. The namespace is "" for a sysctl not
// known to be namespaced.
func SysctlNamespaceOf(nameOrPattern string) (ns SysctlNamespace, nameOrPrefix string, pattern bool) {
	nameOrPrefix = NormalizeSysctlName(nameOrPattern)
	if i := strings.IndexByte(nameOrPrefix, '*'); i >= 0 {
		nameOrPrefix, pattern = nameOrPrefix[:i], true
	}
	if ns, ok := sysctlNamespaces[nameOrPrefix]; ok {
		return ns, nameOrPrefix, pattern
	}
	for p, ns := range sysctlNamespacePrefixes {
		if strings.HasPrefix(nameOrPrefix, p+".") {
			return ns, nameOrPrefix, pattern
		}
	}
	return "", nameOrPrefix, pattern
}

// SysctlMaxLength is the longest sysctl name or pattern Kubernetes takes.
const SysctlMaxLength = 253

// sysctlPattern is Kubernetes' form of an allowlist pattern: segments
// of lower-case letters, digits, '-' and '_' separated by dots or
// slashes, the last of which may end in '*'.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// ValidSysctlPattern says whether s is a sysctl name, or a pattern ending
// in "*", that an allowlist may hold (IsValidSysctlPattern).
func ValidSysctlPattern(s string) bool {
	return len(s) <= SysctlMaxLength && sysctlPattern.MatchString(s)
}
