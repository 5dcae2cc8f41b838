package podnet

import (
	"bytes"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// The first line of the hosts files the kubelet writes: a pod's own, and a
// host-network pod's copy of the node's.
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// HostsFile is the /etc/hosts of a pod not on the host's network, as the
// kubelet writes it (kubelet_pods.go, managedHostsFileContent): its header,
// the IPv4 and IPv6 localhost lines, a line per pod IP with the host name
// (hostname.domain first when the pod has a domain), then hostAliases.
// Fields are separated by tabs.
func HostsFile(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

// HostNetworkHostsFile is the /etc/hosts of a pod on the host's network
// (nodeHostsFileContent): its header, the machine's hosts file as it is, then
// hostAliases.
func HostNetworkHostsFile(machineHosts []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderWithHostNetwork)
	b.Write(machineHosts)
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

// aliasEntries are the lines of hostAliases (hostsEntriesFromHostAliases):
// none without aliases; otherwise an empty line, their comment, and a line
// per alias, its IP then its host names, tab-separated.
func aliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// MountsHostsFile says whether container c gets its pod's hosts file at
// /etc/hosts (shouldMountHostsFile and makeMounts): when the pod has an IP
// or is on the host's network, and no volumeMount of c is at /etc/hosts
// already.
func MountsHostsFile(c *v1.Container, podIPs []string, hostNetwork bool) bool {
	if len(podIPs) == 0 && !hostNetwork {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == EtcHosts {
			return false
		}
	}
	return true
}

// EtcHosts and EtcResolvConf are where a container finds the files.
const (
	EtcHosts      = "/etc/hosts"
	EtcResolvConf = "/etc/resolv.conf"
)

// HostsFileFor is the pod's /etc/hosts, whichever of the kubelet's two it
// gets: on the host's network, the machine's hosts file (machineHosts)
// with its hostAliases (HostNetworkHostsFile); otherwise the managed file
// naming its host name (HostnameAndDomain) at podIPs (HostsFile).
// machineHosts is read only for a pod on the host's network.
func HostsFileFor(pod *model.Pod, podIPs []string, clusterDomain string, machineHosts []byte) ([]byte, error) {
	if pod.Spec.HostNetwork {
		return HostNetworkHostsFile(machineHosts, pod.Spec.HostAliases), nil
	}
	hostname, domain, err := HostnameAndDomain(pod, clusterDomain)
	if err != nil {
		return nil, err
	}
	return HostsFile(podIPs, hostname, domain, pod.Spec.HostAliases), nil
}
