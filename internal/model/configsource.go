package model

// ConfigSourceAnnotation is the kubelet's annotation of where a pod came
// from: "file" or "http" for a static pod (internal/staticpods sets
// "file"), absent or "api" for a pod of the API server.
const ConfigSourceAnnotation = "kubernetes.io/config.source"

// IsStatic says whether the pod did not come from the API server, as the
// kubelet's IsStaticPod.
func IsStatic(pod *Pod) bool {
	src, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && src != "api"
}
