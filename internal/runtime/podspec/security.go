package podspec

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// Security is a container's effective security settings: the pod's
// securityContext with the container's settings taking over field by
// field, as the kubelet merges them (securitycontext's
// DetermineEffectiveSecurityContext), and the rules the kubelet and the
// container runtimes derive from them. Both runtimes read a container's
// settings from here.
type Security struct {
	RunAsUser, RunAsGroup *int64
	RunAsNonRoot          bool
	// SupplementalGroups are the pod's, then its fsGroup, as the kubelet
	// passes them to the runtime.
	SupplementalGroups     []int64
	Privileged             bool
	ReadOnlyRootFilesystem bool
	// NoNewPrivs: allowPrivilegeEscalation false on a container that is
	// not privileged (the kubelet's rule).
	NoNewPrivs   bool
	Capabilities *v1.Capabilities
	// Seccomp is the container's profile, else the pod's; nil: none set.
	Seccomp   *v1.SeccompProfile
	AppArmor  *v1.AppArmorProfile
	SELinux   *v1.SELinuxOptions
	ProcMount v1.ProcMountType
}

// EffectiveSecurity is the effective security settings of container c of
// the pod with spec.
func EffectiveSecurity(spec *v1.PodSpec, c *v1.Container) Security {
	var s Security
	if psc := spec.SecurityContext; psc != nil {
		s.RunAsUser, s.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
		s.RunAsNonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		s.SupplementalGroups = SupplementalGroups(psc)
		s.Seccomp, s.AppArmor, s.SELinux = psc.SeccompProfile, psc.AppArmorProfile, psc.SELinuxOptions
	}
	s.ProcMount = v1.DefaultProcMount
	csc := c.SecurityContext
	if csc == nil {
		return s
	}
	s.RunAsUser = firstSet(csc.RunAsUser, s.RunAsUser)
	s.RunAsGroup = firstSet(csc.RunAsGroup, s.RunAsGroup)
	if csc.RunAsNonRoot != nil {
		s.RunAsNonRoot = *csc.RunAsNonRoot
	}
	s.Privileged = csc.Privileged != nil && *csc.Privileged
	s.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	s.NoNewPrivs = !s.Privileged && csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	s.Capabilities = csc.Capabilities
	s.Seccomp = firstSet(csc.SeccompProfile, s.Seccomp)
	s.AppArmor = firstSet(csc.AppArmorProfile, s.AppArmor)
	// The container's seLinuxOptions replace the pod's whole.
	s.SELinux = firstSet(csc.SELinuxOptions, s.SELinux)
	if csc.ProcMount != nil {
		s.ProcMount = *csc.ProcMount
	}
	return s
}

// SupplementalGroups are the pod's supplementalGroups, then its fsGroup,
// as the kubelet passes them to the runtime.
func SupplementalGroups(psc *v1.PodSecurityContext) []int64 {
	groups := slices.Clone(psc.SupplementalGroups)
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return groups
}

func firstSet[T any](p, q *T) *T {
	if p != nil {
		return p
	}
	return q
}

// DefaultCapabilities are the capabilities a container that is not
// privileged starts from, containerd's and CRI-O's default list.
var DefaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// CapabilityName is a capability of the pod spec (NET_ADMIN, or
// CAP_NET_ADMIN, either case) as the kernel's headers name it
// (CAP_NET_ADMIN); "ALL" stays ALL.
func CapabilityName(c v1.Capability) string {
	n := strings.ToUpper(string(c))
	if n == "ALL" || strings.HasPrefix(n, "CAP_") {
		return n
	}
	return "CAP_" + n
}

// CapabilitySet is the container's capabilities, as containerd computes
// them from all (every capability the machine has, a privileged
// container's set): DefaultCapabilities, all of them with add ALL, none
// with drop ALL, then the added ones, then without the dropped ones.
func (s Security) CapabilitySet(all []string) []string {
	if s.Privileged {
		return slices.Clone(all)
	}
	set := slices.Clone(DefaultCapabilities)
	if s.Capabilities == nil {
		return set
	}
	add := capabilityNames(s.Capabilities.Add)
	drop := capabilityNames(s.Capabilities.Drop)
	if slices.Contains(add, "ALL") {
		set = slices.Clone(all)
	}
	if slices.Contains(drop, "ALL") {
		set = nil
	}
	for _, c := range add {
		if c != "ALL" && !slices.Contains(set, c) {
			set = append(set, c)
		}
	}
	return slices.DeleteFunc(set, func(c string) bool { return slices.Contains(drop, c) })
}

func capabilityNames(caps []v1.Capability) []string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = CapabilityName(c)
	}
	return names
}

// MaskedPaths and ReadonlyPaths are what a container that is not
// privileged, with the Default procMount, may not read (masked) or write
// under /proc and /sys: the container runtimes' defaults (containerd's
// and CRI-O's, the OCI spec's linux.maskedPaths and readonlyPaths).
var (
	MaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	ReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// SeccompRuntimeDefault says whether the container runs under the
// container runtime's default seccomp profile: asked for, and not
// privileged (a privileged container is unconfined, as with containerd).
func (s Security) SeccompRuntimeDefault() bool {
	return !s.Privileged && s.Seccomp != nil && s.Seccomp.Type == v1.SeccompProfileTypeRuntimeDefault
}

// The kubelet's runAsNonRoot refusals (kuberuntime's verifyRunAsNonRoot),
// each a runtime.ContainerConfigError: the container waits in
// CreateContainerConfigError and its start is tried again. user is the
// user the container would run as: its runAsUser, else its image's (the
// agent's for the process runtime); nil when only a name is known.

// VerifyNonRoot refuses container c of pod when runAsNonRoot asks it not
// to run as root and uid (nil: not known, name the image's user) is 0.
func VerifyNonRoot(pod *model.Pod, c *v1.Container, s Security, uid *int64, name string) error {
	if !s.RunAsNonRoot {
		return nil
	}
	who := fmt.Sprintf("(pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
	switch {
	case s.RunAsUser != nil && *s.RunAsUser == 0:
		return runtime.ConfigErrorf("container's runAsUser breaks non-root policy %s", who)
	case s.RunAsUser != nil:
		return nil
	case uid != nil && *uid == 0, uid == nil && name == "":
		return runtime.ConfigErrorf("container has runAsNonRoot and image will run as root %s", who)
	case uid == nil:
		return runtime.ConfigErrorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", name, who)
	}
	return nil
}
