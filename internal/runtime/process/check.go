package process

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podspec"
)

// Check says whether this runtime can run pod as written, before anything
// of it starts. It reports every problem it finds, joined; each wraps
// runtime.ErrUnsupported. It has no side effects and may be called at any
// time.
func (r *Runtime) Check(pod *model.Pod) error {
	errs := r.checkPodSecurity(pod)
	for i := range pod.Spec.Volumes {
		if err := podspec.CheckVolume(&pod.Spec.Volumes[i], i, r.objects.Tokens != nil); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ref := range pod.Containers() {
		if err := r.checkContainer(pod, ref, pod.Container(ref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkContainer is Check for one container: podspec's rules, then the
// process runtime's own refusals. StartContainer and Exec check again, so
// that they never run what Check would reject.
func (r *Runtime) checkContainer(pod *model.Pod, ref model.ContainerRef, c *v1.Container) error {
	if err := podspec.CheckContainer(pod, ref, c); err != nil {
		return err
	}
	p := ref.SpecPath()
	// No pod network here: every pod is on the host's.
	if err := podspec.CheckHostPorts(c, p); err != nil {
		return err
	}
	if len(c.Command) == 0 {
		return runtime.Unsupported("%s.command: Required value: the process runtime runs the command itself and has no image to take it from", p)
	}
	// What would otherwise be silently ignored is refused: never run with
	// more rights than asked.
	if err := r.checkContainerSecurity(c, p); err != nil {
		return err
	}
	if len(c.VolumeMounts) > 0 && r.euid() != 0 {
		return runtime.Unsupported("%s.volumeMounts: Forbidden: the process runtime needs root to give the container a private mount namespace for its volumes, and podward is not running as root", p)
	}
	if len(c.VolumeMounts) > 0 && targetName(pod, ref) != "" {
		return runtime.Unsupported("%s.volumeMounts: Forbidden: with targetContainerName the process runtime runs the container in its target's mount namespace, where mounts of its own would change the target's", p)
	}
	for i, m := range c.VolumeMounts {
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			return runtime.Unsupported("%s.volumeMounts[%d].mountPropagation: Unsupported value: %q: the process runtime supports only None", p, i, *m.MountPropagation)
		}
	}
	return nil
}
