// Package podnet holds the pod's network files as the kubelet writes them:
// its resolver configuration (dns.go: the dnsPolicy, dnsConfig merged, the
// kubelet's limits and the warnings it records where it trims), its
// /etc/hosts (hosts.go) and its host name and domain (hostname.go:
// hostname, subdomain, setHostnameAsFQDN, hostnameOverride).
//
// Everything here is a pure function from the pod and the node's settings
// to content: no file is read or written but by ReadHostDNS, which the
// runtimes call with the node's --resolv-conf. Both runtimes use it: the
// CRI runtime hands the DNS configuration to the sandbox
// (PodSandboxConfig.DnsConfig) and mounts the hosts file at /etc/hosts;
// the process runtime writes both files into the pod's directory and
// mounts them into each container's mount namespace.
//
// It imports nothing of podward but internal/model.
package podnet
