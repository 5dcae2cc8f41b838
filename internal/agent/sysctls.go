package agent

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

// safeSysctl is a sysctl the kubelet lets every pod set: namespaced, so
// that it changes only the pod's own namespace, and isolated, so that it
// cannot starve the other pods of the node. Kernel, when set, is the
// first kernel release that namespaces it.
type safeSysctl struct {
	name   string
	kernel string
}

// safeSysctls are the kubelet's safe sysctls (pkg/kubelet/sysctl/
// safe_sysctls.go, with the kernel releases of pkg/util/kernel, 1.37).
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_slow_start_after_idle", kernel: "4.15"},
	{name: "net.ipv4.tcp_notsent_lowat", kernel: "4.6"},
}

// SafeSysctls are the safe sysctls on a kernel of that release (uname -r,
// /proc/sys/kernel/osrelease), as the kubelet's SafeSysctlAllowlist: a
// sysctl that kernel does not namespace yet is left out, and so is every
// sysctl that needs a release when kernelRelease cannot be read ("").
func SafeSysctls(kernelRelease string) []string {
	kernel, err := version.ParseGeneric(kernelRelease)
	if err != nil {
		kernel = nil
	}
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel)) {
			out = append(out, s.name)
		}
	}
	return out
}

// SysctlAllowlist is the sysctls the node lets a pod set in
// spec.securityContext.sysctls: the safe ones and the kubelet's
// --allowed-unsafe-sysctls, names or patterns ending in "*". Each is
// kept with its namespace (model.SysctlNamespaceOf): one of the host's
// namespaces the pod shares is refused. It is immutable once made.
type SysctlAllowlist struct {
	names    map[string]model.SysctlNamespace
	prefixes map[string]model.SysctlNamespace
}

// NewSysctlAllowlist is the kubelet's allowlist (pkg/kubelet/sysctl/
// allowlist.go, NewAllowlist) of the safe sysctls on a kernel of that
// release (SafeSysctls) and of unsafe, the names and patterns of
// --allowed-unsafe-sysctls. An entry that is no sysctl name or pattern, or
// whose sysctls are not known to be namespaced, is an error, in the
// kubelet's words.
func NewSysctlAllowlist(kernelRelease string, unsafe []string) (*SysctlAllowlist, error) {
	return newSysctlAllowlist(append(SafeSysctls(kernelRelease), unsafe...))
}

func newSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]model.SysctlNamespace{}, prefixes: map[string]model.SysctlNamespace{}}
	for _, s := range patterns {
		if !model.ValidSysctlPattern(s) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", s, model.SysctlMaxLength, sysctlPatternFmt)
		}
		ns, nameOrPrefix, pattern := model.SysctlNamespaceOf(s)
		if ns == "" {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if pattern {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.names[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// sysctlPatternFmt is the form of a pattern as the kubelet's error shows it
// (SysctlContainSlashPatternFmt).
const sysctlPatternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

// allSafeSysctls is the allowlist of an agent whose Config has none: every
// safe sysctl, as on a current kernel.
func allSafeSysctls() *SysctlAllowlist {
	w := &SysctlAllowlist{names: map[string]model.SysctlNamespace{}, prefixes: map[string]model.SysctlNamespace{}}
	for _, s := range safeSysctls {
		ns, name, _ := model.SysctlNamespaceOf(s.name)
		w.names[name] = ns
	}
	return w
}

// forbidden is nil when a pod may set the sysctl name, else why not, in
// the kubelet's words (validateSysctl): not on the list, or of a namespace
// the pod shares with the host (the network with hostNetwork, IPC with
// hostIPC, the user namespace unless hostUsers is false).
func (w *SysctlAllowlist) forbidden(name string, hostNet, hostIPC, hostUsers bool) error {
	name = model.NormalizeSysctlName(name)
	ns, ok := w.names[name]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if ns == model.SysctlIPC && hostIPC || ns == model.SysctlNet && hostNet || ns == model.SysctlUser && hostUsers {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// admit is the rejection of a pod that sets a sysctl the allowlist
// forbids, nil when it sets none: the kubelet's sysctl admit handler
// (allowlist.go, Admit), reason SysctlForbidden, message "forbidden
// sysctl: " and why, of the first sysctl it forbids.
func (w *SysctlAllowlist) admit(pod *model.Pod) *RejectedError {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range sc.Sysctls {
		if err := w.forbidden(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return &RejectedError{Reason: events.SysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return nil
}
