package process

import (
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/capabilities"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// What a process-runtime container is restricted to: its securityContext
// (podspec.EffectiveSecurity) as the init helper applies it
// (launch.Security), with what a container runtime gives every container
// that is not privileged: the default capabilities, a PID namespace of its
// own unless hostPID, a /dev of its own, the masked and read-only paths of
// /proc and /sys, and none of the agent's state, socket or other pods in
// its view. What this runtime cannot honour, checkSecurity refuses.

// security is what container c of pod runs with. As root, all of it;
// otherwise podward can change neither the user nor the view (Check
// refuses what would need it), and gives no_new_privs and the seccomp
// filter (which then needs no_new_privs). A runAsNonRoot the user breaks
// is the kubelet's CreateContainerConfigError.
func (r *Runtime) security(pod *model.Pod, c *v1.Container) (*launch.Security, error) {
	s := podspec.EffectiveSecurity(&pod.Spec, c)
	if err := r.verifyNonRoot(pod, c, s); err != nil {
		return nil, err
	}
	ls := &launch.Security{NoNewPrivs: s.NoNewPrivs}
	if s.SeccompRuntimeDefault() {
		ls.Seccomp = launch.SeccompRuntimeDefault
	}
	if r.euid() != 0 {
		ls.NoNewPrivs = ls.NoNewPrivs || ls.Seccomp != ""
		return ls, nil
	}
	ls.Capabilities = s.CapabilitySet(capabilities.All())
	ls.PIDNamespace = !pod.Spec.HostPID
	ls.ReadOnlyRoot = s.ReadOnlyRootFilesystem
	ls.Hidden = r.hidden
	if !s.Privileged {
		ls.Devices = true
		if s.ProcMount != v1.UnmaskedProcMount {
			ls.MaskedPaths = podspec.MaskedPaths
			ls.ReadonlyPaths = slices.Clone(podspec.ReadonlyPaths)
		}
		// sysfs is read-only in a container that is not privileged.
		ls.ReadonlyPaths = append(ls.ReadonlyPaths, "/sys")
	}
	if s.RunAsUser != nil || s.RunAsGroup != nil || len(s.SupplementalGroups) > 0 {
		ls.User = &launch.User{UID: uint32(deref(s.RunAsUser)), GID: uint32(deref(s.RunAsGroup))}
		for _, g := range s.SupplementalGroups {
			ls.User.Groups = append(ls.User.Groups, uint32(g))
		}
	}
	return ls, nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// verifyNonRoot refuses to start c as root when runAsNonRoot asks it not
// to (podspec.VerifyNonRoot): its runAsUser is 0, or it has none and the
// agent's user, which it then runs as (the process runtime's "image"
// user), is root.
func (r *Runtime) verifyNonRoot(pod *model.Pod, c *v1.Container, s podspec.Security) error {
	euid := int64(r.euid())
	return podspec.VerifyNonRoot(pod, c, s, &euid, "")
}

// checkPodSecurity refuses the pod-level settings the process runtime
// cannot honour.
func (r *Runtime) checkPodSecurity(pod *model.Pod) []error {
	var errs []error
	spec := &pod.Spec
	if spec.HostUsers != nil && !*spec.HostUsers {
		errs = append(errs, runtime.Unsupported("spec.hostUsers: Unsupported value: false: the process runtime has no user namespaces"))
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && !spec.HostPID {
		errs = append(errs, runtime.Unsupported("spec.shareProcessNamespace: Unsupported value: true: the process runtime gives each container a PID namespace of its own (or the host's, with hostPID)"))
	}
	if !spec.HostPID && r.euid() != 0 {
		errs = append(errs, runtime.Unsupported("spec.hostPID: Unsupported value: false: the process runtime needs root to give a container a PID namespace of its own, and podward is not running as root (set hostPID: true to share the host's)"))
	}
	if sc := spec.SecurityContext; sc != nil {
		p := "spec.securityContext"
		if len(sc.Sysctls) > 0 {
			errs = append(errs, runtime.Unsupported("%s.sysctls: Forbidden: the process runtime runs pods in the host's network and IPC namespaces: their sysctls would change the host's", p))
		}
		errs = append(errs, r.checkCommonSecurity(p, sc.SeccompProfile, sc.AppArmorProfile, sc.SELinuxOptions)...)
		if r.euid() != 0 && (sc.RunAsUser != nil || sc.RunAsGroup != nil || len(sc.SupplementalGroups) > 0 || sc.FSGroup != nil) {
			errs = append(errs, runtime.Unsupported("%s: Forbidden: podward is not running as root and cannot run containers as another user or with other groups (runAsUser, runAsGroup, supplementalGroups, fsGroup)", p))
		}
	}
	return errs
}

// checkContainerSecurity refuses the container-level settings the process
// runtime cannot honour; p is the container's field path.
func (r *Runtime) checkContainerSecurity(c *v1.Container, p string) error {
	sc := c.SecurityContext
	if sc == nil {
		return nil
	}
	p += ".securityContext"
	if errs := r.checkCommonSecurity(p, sc.SeccompProfile, sc.AppArmorProfile, sc.SELinuxOptions); len(errs) > 0 {
		return errs[0]
	}
	if r.euid() == 0 {
		return nil
	}
	switch {
	case sc.RunAsUser != nil || sc.RunAsGroup != nil:
		return runtime.Unsupported("%s.runAsUser: Forbidden: podward is not running as root and cannot run the container as another user or group", p)
	case sc.Privileged != nil && *sc.Privileged:
		return runtime.Unsupported("%s.privileged: Forbidden: podward is not running as root and has no privileges to give", p)
	case sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem:
		return runtime.Unsupported("%s.readOnlyRootFilesystem: Forbidden: the process runtime needs root to give the container a read-only view of the host's filesystem, and podward is not running as root", p)
	case sc.Capabilities != nil && len(sc.Capabilities.Add) > 0:
		return runtime.Unsupported("%s.capabilities.add: Forbidden: podward is not running as root and has no capabilities to give", p)
	}
	return nil
}

// checkCommonSecurity refuses the profiles the process runtime cannot
// apply, at the pod's or a container's level p: a Localhost seccomp
// profile (podward keeps no profiles), an AppArmor profile but
// Unconfined, SELinux options on a host whose SELinux enforces them
// (elsewhere they mean nothing, as with runc).
func (r *Runtime) checkCommonSecurity(p string, seccomp *v1.SeccompProfile, apparmor *v1.AppArmorProfile, selinux *v1.SELinuxOptions) []error {
	var errs []error
	if seccomp != nil && seccomp.Type == v1.SeccompProfileTypeLocalhost {
		errs = append(errs, runtime.Unsupported("%s.seccompProfile.type: Unsupported value: %q: the process runtime has only RuntimeDefault and Unconfined", p, seccomp.Type))
	}
	if apparmor != nil && apparmor.Type != v1.AppArmorProfileTypeUnconfined {
		errs = append(errs, runtime.Unsupported("%s.appArmorProfile.type: Unsupported value: %q: the process runtime does not apply AppArmor profiles", p, apparmor.Type))
	}
	if selinux != nil && r.selinuxEnforcing() {
		errs = append(errs, runtime.Unsupported("%s.seLinuxOptions: Unsupported value: SELinux enforces on this host and the process runtime does not label containers", p))
	}
	return errs
}

// hostSELinuxEnforcing says whether SELinux enforces on this host.
func hostSELinuxEnforcing() bool {
	raw, err := os.ReadFile("/sys/fs/selinux/enforce")
	return err == nil && strings.TrimSpace(string(raw)) == "1"
}
