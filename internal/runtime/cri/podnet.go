package cri

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
)

// hostsFile is the pod's hosts file, as the kubelet keeps it:
// <pod's directory>/etc-hosts.
func (r *Runtime) hostsFile(uid types.UID) string { return filepath.Join(r.podDir(uid), "etc-hosts") }

// hostsMount writes the pod's hosts file and returns its mount at
// /etc/hosts in container c, as the kubelet's makeMounts does after the
// sandbox runs (it needs the sandbox's IP): a pod not on the host's
// network gets the kubelet's managed file (podnet.HostsFile) with its IP,
// its status's podIP: the sandbox's, or the node's for a pod put on the
// host's network because Config.PodNetwork is off, as the process runtime
// names its pods at theirs. A hostNetwork pod gets the host's hosts file
// with its hostAliases (podnet.HostNetworkHostsFile). It is nil when c
// mounts a volume at /etc/hosts, or the pod has no IP yet: the CRI
// runtime's own copy of the host's file is left then. The file is written
// again for each container, as the kubelet does.
func (r *Runtime) hostsMount(pod *model.Pod, c *v1.Container) (*runtimeapi.Mount, error) {
	ips := r.statusIPs(pod)
	if !podnet.MountsHostsFile(c, ips, pod.Spec.HostNetwork) {
		return nil, nil
	}
	p := r.hostsFile(pod.UID)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return nil, fmt.Errorf("hosts file: %w", err)
	}
	if err := podspec.WriteHostsFile(p, pod, ips, r.dns.ClusterDomain); err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{ContainerPath: podnet.EtcHosts, HostPath: p}, nil
}
