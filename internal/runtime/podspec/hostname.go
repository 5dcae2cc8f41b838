package podspec

import (
	"strings"

	"github.com/podward/podward/internal/model"
)

// hostnameMaxLen is the longest host name Linux takes (64 bytes with the
// terminating NUL).
const hostnameMaxLen = 63

// Hostname is the host name a pod's containers see, as the kubelet makes
// it (pkg/kubelet/kubelet_pods.go, GeneratePodHostNameAndDomain):
// spec.hostname, else the pod's name, cut to 63 characters without a
// trailing '-' or '.'. spec.subdomain only makes the pod's domain, which
// needs a cluster domain podward does not have, so it does not change the
// name. A pod on the host's network sees the host's name instead; callers
// decide that.
func Hostname(pod *model.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > hostnameMaxLen {
		h = strings.TrimRight(h[:hostnameMaxLen], "-.")
	}
	return h
}
