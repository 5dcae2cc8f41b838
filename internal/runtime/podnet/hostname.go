package podnet

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podward/podward/internal/model"
)

// hostnameMaxLen is the longest host name Linux takes (64 bytes with the
// terminating NUL); fqdnMaxLen is the longest FQDN the kubelet puts in the
// kernel's nodename field (setHostnameAsFQDN).
const (
	hostnameMaxLen = 63
	fqdnMaxLen     = 64
)

// HostnameAndDomain are the pod's host name and domain as the kubelet makes
// them (pkg/kubelet/kubelet_pods.go, GeneratePodHostNameAndDomain):
// spec.hostnameOverride when set (a DNS subdomain, and then no domain);
// else spec.hostname, else the pod's name; cut to 63 characters without a
// trailing '-' or '.'. The domain is <subdomain>.<namespace>.svc.<clusterDomain>
// when spec.subdomain is set, "" otherwise. The error names the field that
// is not valid (the model validates them already; the kubelet checks again).
func HostnameAndDomain(pod *model.Pod, clusterDomain string) (hostname, domain string, err error) {
	spec := &pod.Spec
	if o := spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("spec.hostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		h, err := truncate(pod.Name, *o)
		return h, "", err
	}
	hostname = pod.Name
	if spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("spec.hostname %q is not a valid DNS label: %s", spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = spec.Hostname
	}
	if hostname, err = truncate(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("spec.subdomain %q is not a valid DNS label: %s", spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncate cuts a host name longer than 63 characters, and then the '-'
// and '.' it ends with (truncatePodHostnameIfNeeded).
func truncate(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	h := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if h == "" {
		return "", fmt.Errorf("host name of pod %q is not valid: %q", podName, hostname)
	}
	return h, nil
}

// KernelHostname is the host name the pod's UTS namespace gets (the
// kubelet's GetNodenameForKernel): hostname, or hostname.domain when the
// pod sets setHostnameAsFQDN and has a domain; an FQDN longer than 64
// characters fails with the kubelet's message.
func KernelHostname(pod *model.Pod, hostname, domain string) (string, error) {
	fqdn := pod.Spec.SetHostnameAsFQDN
	if domain == "" || fqdn == nil || !*fqdn {
		return hostname, nil
	}
	name := hostname + "." + domain
	if len(name) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", name, fqdnMaxLen, len(name))
	}
	return name, nil
}

// Hostname is the host name the pod's containers see in their UTS
// namespace (HostnameAndDomain, then KernelHostname); a pod on the host's
// network sees the host's name instead, which callers decide.
func Hostname(pod *model.Pod, clusterDomain string) (string, error) {
	h, d, err := HostnameAndDomain(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	return KernelHostname(pod, h, d)
}
