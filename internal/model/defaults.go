package model

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Default fills in what the Kubernetes API server would default on create,
// for the parts of a pod that podward reads:
//
//   - metadata.namespace "default";
//   - spec.restartPolicy Always, spec.dnsPolicy ClusterFirst,
//     spec.terminationGracePeriodSeconds 30, spec.schedulerName
//     "default-scheduler";
//   - spec.serviceAccountName "default" (the API server's ServiceAccount
//     admission plugin), or the deprecated spec.serviceAccount when only
//     that is set, and spec.serviceAccount the same, as the API server
//     writes both;
//   - a volume with no source becomes an emptyDir, hostPath.type becomes ""
//     (no check);
//   - for every container (init, regular and defer): terminationMessagePath,
//     terminationMessagePolicy File, imagePullPolicy (Always for ":latest" or
//     an image with neither tag nor digest, IfNotPresent otherwise), port
//     protocol TCP (and hostPort = containerPort on the host network),
//     requests copied from limits where unset, env fieldRef apiVersion v1,
//     probe timings (1 s timeout, 10 s period, thresholds 1 and 3), httpGet
//     path "/" and scheme HTTP, grpc service "";
//   - defer containers without a restartPolicy get OnFailure: they are retried
//     until they succeed;
//   - the pod-level resources (spec.resources) a pod sets only partly are
//     completed from its containers' and from each other
//     (defaultPodLevelResources).
//
// Default changes p in place and never overwrites a value that is set, so it
// is idempotent. Values it cannot make sense of (a negative grace period, an
// unknown policy) are left for Validate to report. A nil p, or a p without a
// Pod, is left alone.
func Default(p *Pod) {
	if p == nil || p.Pod == nil {
		return
	}
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}

	spec := &p.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccountName
	}
	if spec.DeprecatedServiceAccount == "" {
		spec.DeprecatedServiceAccount = spec.ServiceAccountName
	}

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range p.Defer {
		c := &p.Defer[i]
		defaultContainer(c, spec.HostNetwork)
		if c.RestartPolicy == nil {
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyOnFailure)
		}
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), spec.HostNetwork)
	}
	defaultPodLevelResources(spec)
}

func defaultVolume(vol *v1.Volume) {
	if len(volumeSourceNames(&vol.VolumeSource)) == 0 {
		vol.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if vol.HostPath != nil && vol.HostPath.Type == nil {
		vol.HostPath.Type = ptr.To(v1.HostPathUnset)
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	for i := range c.Ports {
		port := &c.Ports[i]
		if port.Protocol == "" {
			port.Protocol = v1.ProtocolTCP
		}
		if hostNetwork && port.HostPort == 0 {
			port.HostPort = port.ContainerPort
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil && from.FieldRef.APIVersion == "" {
			from.FieldRef.APIVersion = "v1"
		}
	}
	if len(c.Resources.Limits) > 0 {
		if c.Resources.Requests == nil {
			c.Resources.Requests = v1.ResourceList{}
		}
		for name, limit := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = limit.DeepCopy()
			}
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultLifecycleHandler(c.Lifecycle.PostStart)
		defaultLifecycleHandler(c.Lifecycle.PreStop)
	}
}

// defaultPullPolicy is the API server's rule: Always for the tag "latest"
// (also implied by an image with neither tag nor digest), IfNotPresent for
// everything else. An empty image gets IfNotPresent, as in Kubernetes, and is
// reported by Validate.
func defaultPullPolicy(image string) v1.PullPolicy {
	if image == "" {
		return v1.PullIfNotPresent
	}
	name, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	// A colon before the last slash belongs to a registry host:port.
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultLifecycleHandler(h *v1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}
