package wire

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent's usage endpoint (`podward top pod`), at the paths and in the
// shape of the resource metrics API (metrics.k8s.io/v1beta1, which
// metrics-server serves and `kubectl top pod` reads): each running pod's
// containers with their CPU rate and memory working set. Declared here
// rather than imported, since k8s.io/metrics is not a dependency.
const (
	// MetricsGroupVersion is the API group and version of the paths.
	MetricsGroupVersion = "metrics.k8s.io/v1beta1"
	// MetricsPodsPath lists every namespace's pods' metrics;
	// MetricsNamespacedPodsPath (with {ns}) one namespace's, and with
	// "/{name}" one pod's.
	MetricsPodsPath           = "/apis/" + MetricsGroupVersion + "/pods"
	MetricsNamespacedPodsPath = "/apis/" + MetricsGroupVersion + "/namespaces/{ns}/pods"
)

// PodMetrics is one pod's usage over Window ending at Timestamp: the
// metrics API's PodMetrics.
type PodMetrics struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Timestamp is when the newer of the two samples was taken.
	Timestamp metav1.Time `json:"timestamp"`
	// Window is the time between the two samples the CPU rate is
	// computed from.
	Window metav1.Duration `json:"window"`
	// Containers are the pod's running containers, by name.
	Containers []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one container's usage: "cpu" in cores (a rate over
// the window) and "memory" its working set in bytes, as metrics-server
// reports them.
type ContainerMetrics struct {
	Name  string          `json:"name"`
	Usage v1.ResourceList `json:"usage"`
}

// PodMetricsList is a list of PodMetrics.
type PodMetricsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMetrics `json:"items"`
}
