package cri

import (
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
)

// Labels podward puts on every sandbox and container, so that the CRI
// runtime alone tells what belongs to which pod: the kubelet's, for tools
// such as crictl, and podward's own. Every list call filters on LabelManaged
// and LabelRoot: containers of other users of the same CRI runtime (a
// kubelet, another podward with another root) are never touched.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	// LabelManaged is "true" on everything podward created.
	LabelManaged = "podward.io/managed"
	// LabelRoot is a hash of the absolute Config.Root of the Runtime that
	// created it.
	LabelRoot = "podward.io/root"
	// LabelRole is the container's role: init, sidecar, main or defer.
	LabelRole = "podward.io/role"
	// LabelIndex is the container's index in the pod's start order.
	LabelIndex = "podward.io/index"
	// LabelAttempt is the instance's attempt (its restart count).
	LabelAttempt = "podward.io/attempt"
)

// Annotations on containers (and the grace period on sandboxes too).
const (
	AnnotationRestartCount   = "io.kubernetes.container.restartCount"
	AnnotationPodGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationGracePeriod    = "podward.io/grace-period"

	// The termination message: where its file is mounted and the policy,
	// as the kubelet annotates them, and the container's share of the
	// pod's budget (podspec.TerminationMessageLimit).
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationTerminationMessageLimit  = "podward.io/termination-message-limit"
)

// selector is the label selector of everything this Runtime owns, plus
// extra key/value pairs.
func (r *Runtime) selector(extra ...string) map[string]string {
	m := map[string]string{LabelManaged: "true", LabelRoot: r.rootLabel}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// podLabels are a sandbox's labels.
func (r *Runtime) podLabels(pod *model.Pod) map[string]string {
	return r.selector(
		LabelPodName, pod.Name,
		LabelPodNamespace, pod.Namespace,
		LabelPodUID, string(pod.UID),
	)
}

// containerLabels are an instance's labels.
func (r *Runtime) containerLabels(pod *model.Pod, ref model.ContainerRef, attempt int) map[string]string {
	m := r.podLabels(pod)
	m[LabelContainerName] = ref.Name
	m[LabelRole] = ref.Role.String()
	m[LabelIndex] = strconv.Itoa(startIndex(pod, ref))
	m[LabelAttempt] = strconv.Itoa(attempt)
	return m
}

// startIndex is ref's position in the pod's start order.
func startIndex(pod *model.Pod, ref model.ContainerRef) int {
	for i, r := range pod.Containers() {
		if r == ref {
			return i
		}
	}
	return -1
}

func graceAnnotations(pod *model.Pod) map[string]string {
	g := strconv.FormatInt(pod.GracePeriodSeconds(), 10)
	return map[string]string{AnnotationPodGracePeriod: g, AnnotationGracePeriod: g}
}

// identity is who an instance is, read back from its labels.
type identity struct {
	podUID       types.UID
	podName      string
	podNamespace string
	container    string
	attempt      int
}

// identify reads an instance's identity from its labels, falling back to
// the CRI metadata for the name and attempt.
func identify(labels map[string]string, meta *runtimeapi.ContainerMetadata) identity {
	id := identity{
		podUID:       types.UID(labels[LabelPodUID]),
		podName:      labels[LabelPodName],
		podNamespace: labels[LabelPodNamespace],
		container:    labels[LabelContainerName],
	}
	if id.container == "" {
		id.container = meta.GetName()
	}
	if a, err := strconv.Atoi(labels[LabelAttempt]); err == nil {
		id.attempt = a
	} else {
		id.attempt = int(meta.GetAttempt())
	}
	return id
}
