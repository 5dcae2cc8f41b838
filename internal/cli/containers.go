package cli

import (
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// defaultContainerAnnotation names the container kubectl picks when none
// is given (KEP-2227).
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// pickContainer is the container a verb acts on, as kubectl picks it
// (FindOrDefaultContainerByName in kubectl's pkg/cmd/util/podcmd): the one
// named, which must be in the pod; else the one the default-container
// annotation names, when the pod has it (a warning otherwise); else the
// first regular container, saying so on warn unless quiet when the pod has
// others. deferred are the pod's defer containers, for the verbs that
// reach them (logs): they count as the pod's and are listed last.
func pickContainer(pod *v1.Pod, name string, deferred []v1.Container, quiet bool, warn io.Writer) (string, error) {
	has := func(name string) bool {
		for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers, deferred} {
			for _, c := range list {
				if c.Name == name {
					return true
				}
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	if name != "" {
		if !has(name) {
			return "", fmt.Errorf("container %s is not valid for pod %s out of: %s", name, pod.Name, allContainerNames(pod, deferred))
		}
		return name, nil
	}
	if d := pod.Annotations[defaultContainerAnnotation]; d != "" {
		if has(d) {
			return d, nil
		}
		fmt.Fprintf(warn, "Default container name %q not found in pod %s\n", d, pod.Name)
	}
	if len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("pod %s/%s does not have any containers", pod.Namespace, pod.Name)
	}
	first := pod.Spec.Containers[0].Name
	if !quiet && (len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 || len(deferred) > 0) {
		fmt.Fprintf(warn, "Defaulted container %q out of: %s\n", first, allContainerNames(pod, deferred))
	}
	return first, nil
}

// allContainerNames is kubectl's list of a pod's containers (regular,
// ephemeral "(ephem)", init "(init)"), then the defer containers, marked
// "(defer)".
func allContainerNames(pod *v1.Pod, deferred []v1.Container) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name+" (ephem)")
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	for _, c := range deferred {
		names = append(names, c.Name+" (defer)")
	}
	return strings.Join(names, ", ")
}
