package cri

import (
	"errors"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podspec"
)

// notSupported is the usual message: the field, and that this runtime
// cannot honour it.
func notSupported(field string) error {
	return runtime.Unsupported("%s: not supported by the CRI runtime", field)
}

// Check says whether this runtime can run pod as written, before anything
// of it starts: what it cannot honour is refused rather than silently
// ignored. It reports every problem it finds, joined; each wraps
// runtime.ErrUnsupported and names the field. It has no side effects and
// may be called at any time. PreparePod and StartContainer check again.
func (r *Runtime) Check(pod *model.Pod) error {
	errs := r.checkPod(pod)
	for _, ref := range pod.Containers() {
		if err := r.checkContainer(pod, ref, pod.Container(ref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkPod checks the pod-level fields. A pod for another OS (spec.os.name)
// never gets here: the agent rejects it at admission, as the kubelet does
// (reason PodOSNotSupported).
func (r *Runtime) checkPod(pod *model.Pod) []error {
	var errs []error
	spec := &pod.Spec
	if spec.HostUsers != nil && !*spec.HostUsers {
		errs = append(errs, notSupported("spec.hostUsers"))
	}
	if r := spec.Resources; r != nil {
		for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
			if name != v1.ResourceCPU && name != v1.ResourceMemory {
				errs = append(errs, runtime.Unsupported("spec.resources.limits[%s]: not supported by the CRI runtime, which limits only cpu and memory", name))
			}
		}
	}
	if sc := spec.SecurityContext; sc != nil {
		p := "spec.securityContext"
		if err := checkProfiles(sc.SeccompProfile, sc.AppArmorProfile, p); err != nil {
			errs = append(errs, err)
		}
		if len(sc.Sysctls) > 0 && r.hostNetwork(pod) {
			errs = append(errs, runtime.Unsupported("%s.sysctls: Forbidden: the pod shares the host's network (and IPC) namespaces: its sysctls would change the host's", p))
		}
		if sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyMerge {
			errs = append(errs, runtime.Unsupported("%s.supplementalGroupsPolicy: Unsupported value: %q: not supported by the CRI runtime", p, *sc.SupplementalGroupsPolicy))
		}
	}
	for i := range spec.Volumes {
		if err := podspec.CheckVolume(&spec.Volumes[i], i, r.objects.Tokens != nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkProfiles rejects the seccomp and AppArmor profiles this runtime
// cannot apply: a Localhost seccomp profile (podward keeps no profile
// directory) and any AppArmor profile but Unconfined.
func checkProfiles(seccomp *v1.SeccompProfile, apparmor *v1.AppArmorProfile, p string) error {
	if seccomp != nil && seccomp.Type == v1.SeccompProfileTypeLocalhost {
		return runtime.Unsupported("%s.seccompProfile.type: Unsupported value: %q: not supported by the CRI runtime", p, seccomp.Type)
	}
	if apparmor != nil && apparmor.Type != v1.AppArmorProfileTypeUnconfined {
		return runtime.Unsupported("%s.appArmorProfile.type: Unsupported value: %q: not supported by the CRI runtime", p, apparmor.Type)
	}
	return nil
}

// checkContainer is Check for one container: podspec's rules, then the
// CRI runtime's own refusals.
func (r *Runtime) checkContainer(pod *model.Pod, ref model.ContainerRef, c *v1.Container) error {
	if err := podspec.CheckContainer(pod, ref, c); err != nil {
		return err
	}
	p := ref.SpecPath()
	if r.hostNetwork(pod) {
		if err := podspec.CheckHostPorts(c, p); err != nil {
			return err
		}
	}
	for name := range c.Resources.Limits {
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			return runtime.Unsupported("%s.resources.limits[%s]: not supported by the CRI runtime, which limits only cpu and memory", p, name)
		}
	}
	if len(c.Resources.Claims) > 0 {
		return notSupported(p + ".resources.claims")
	}
	return checkSecurity(pod.Spec.SecurityContext, c.SecurityContext, p)
}

// checkSecurity rejects the security settings this runtime does not apply.
func checkSecurity(pod *v1.PodSecurityContext, c *v1.SecurityContext, p string) error {
	var user, group *int64
	if pod != nil {
		user, group = pod.RunAsUser, pod.RunAsGroup
	}
	if c != nil {
		p := p + ".securityContext"
		if c.ProcMount != nil && *c.ProcMount != v1.DefaultProcMount {
			return runtime.Unsupported("%s.procMount: Unsupported value: %q: not supported by the CRI runtime", p, *c.ProcMount)
		}
		if err := checkProfiles(c.SeccompProfile, c.AppArmorProfile, p); err != nil {
			return err
		}
		if c.RunAsUser != nil {
			user = c.RunAsUser
		}
		if c.RunAsGroup != nil {
			group = c.RunAsGroup
		}
	}
	if group != nil && user == nil {
		// containerd refuses a group without a user.
		return runtime.Unsupported("%s.securityContext.runAsGroup: Forbidden: the CRI runtime needs runAsUser too", p)
	}
	return nil
}
