package podnet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's limits (pkg/apis/core/validation: MaxDNSNameservers,
// MaxDNSSearchPaths and MaxDNSSearchListChars of the expanded DNS
// configuration, GA since 1.28; a search path longer than a DNS subdomain
// is dropped, as glibc aborts on one), and its ClusterFirst options.
const (
	MaxNameservers     = 3
	MaxSearchPaths     = 32
	MaxSearchListChars = 2048
	maxSearchPathLen   = 253
	// maxResolvConf bounds the host's resolv.conf the kubelet reads.
	maxResolvConf = 10 << 20
)

var defaultOptions = []string{"ndots:5"}

// Settings are the node's DNS settings, the kubelet's flags of the same
// names: ClusterDNS (--cluster-dns, the cluster DNS servers' IPs),
// ClusterDomain (--cluster-domain) and ResolvConf (--resolv-conf, the
// host's resolver configuration the pods' is made from; "" for none).
type Settings struct {
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string
}

// Config is a resolver configuration: its nameserver lines, its search
// list and its options ("ndots:5", "rotate"), as CRI's DNSConfig has them.
type Config struct {
	Servers  []string
	Searches []string
	Options  []string
}

// ResolvConf is c as a resolv.conf file, as containerd writes a sandbox's
// from CRI's DNSConfig: the search line, a nameserver line per server, the
// options line; each only when there is something in it.
func (c Config) ResolvConf() []byte {
	var b bytes.Buffer
	if len(c.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(c.Searches, " "))
	}
	for _, s := range c.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(c.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(c.Options, " "))
	}
	return b.Bytes()
}

// Warning is an event the kubelet records where it changes what a pod
// asked for: the reason (MissingClusterDNS, DNSConfigForming) and its
// message. All are of type Warning, on the pod.
type Warning struct {
	Reason  string
	Message string
}

// The reasons of the Warnings.
const (
	ReasonMissingClusterDNS = "MissingClusterDNS"
	ReasonDNSConfigForming  = "DNSConfigForming"
)

// DNS is the pod's resolver configuration as the kubelet makes it
// (pkg/kubelet/network/dns/dns.go, GetPodDNS) from the node's settings s
// and host, the host's configuration (ReadHostDNS of s.ResolvConf):
//
//   - None: only spec.dnsConfig;
//   - ClusterFirst (not on the host's network) and ClusterFirstWithHostNet:
//     the cluster DNS servers, the search list <ns>.svc.<domain>
//     svc.<domain> <domain> then the host's, and ndots:5; without a cluster
//     DNS, Default instead, with the kubelet's MissingClusterDNS warning;
//   - Default, and ClusterFirst on the host's network: the host's
//     configuration (without a ResolvConf, 127.0.0.1 and the search ".").
//
// spec.dnsConfig is merged in then: its nameservers and searches appended
// without duplicates, its options replacing those of the same name. The
// result is cut to the kubelet's limits (MaxNameservers, MaxSearchPaths,
// MaxSearchListChars), with a DNSConfigForming warning for each cut.
// isHost is true when the result is the host's resolv.conf untouched
// (Default or the fallback, a ResolvConf, no dnsConfig, nothing cut).
func DNS(pod *v1.Pod, s Settings, host Config) (c Config, isHost bool, warnings []Warning) {
	c = Config{Servers: clone(host.Servers), Searches: clone(host.Searches), Options: clone(host.Options)}
	useHost := false
	switch podDNSType(pod) {
	case v1.DNSNone:
		c = Config{}
	case v1.DNSClusterFirst:
		if len(s.ClusterDNS) > 0 {
			c.Servers = clone(s.ClusterDNS)
			c.Searches = clusterSearches(pod.Namespace, s.ClusterDomain, c.Searches)
			c.Options = clone(defaultOptions)
			break
		}
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
		warnings = append(warnings, Warning{ReasonMissingClusterDNS, fmt.Sprintf("pod: %q. %s", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", msg)})
		useHost = true
	default:
		useHost = true
	}
	if useHost && s.ResolvConf == "" {
		// Without a resolv.conf, the kubelet points the pod at the
		// nameserver of the local machine.
		c = Config{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		c.Servers = omitDuplicates(append(c.Servers, dc.Nameservers...))
		c.Searches = omitDuplicates(append(c.Searches, dc.Searches...))
		c.Options = mergeOptions(c.Options, dc.Options)
	}
	var cut []Warning
	c, cut = fitLimits(c)
	warnings = append(warnings, cut...)
	return c, useHost && s.ResolvConf != "" && pod.Spec.DNSConfig == nil && len(cut) == 0, warnings
}

// podDNSType is the policy the pod's DNS is made by (getPodDNSType):
// ClusterFirst (also for ClusterFirstWithHostNet, and ClusterFirst off the
// host's network), Default (also ClusterFirst on the host's network) or
// None. An unknown policy, which validation refuses, is ClusterFirst.
func podDNSType(pod *v1.Pod) v1.DNSPolicy {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return v1.DNSNone
	case v1.DNSDefault:
		return v1.DNSDefault
	case v1.DNSClusterFirst:
		if pod.Spec.HostNetwork {
			return v1.DNSDefault
		}
	}
	return v1.DNSClusterFirst
}

// clusterSearches is the ClusterFirst search list
// (generateSearchesForDNSClusterFirst): the cluster's domains, then the
// host's, without duplicates; the host's alone without a cluster domain.
func clusterSearches(ns, domain string, host []string) []string {
	if domain == "" {
		return host
	}
	return omitDuplicates(append([]string{ns + ".svc." + domain, "svc." + domain, domain}, host...))
}

// fitLimits cuts c to the kubelet's limits (formDNSConfigFitsLimits), with
// a warning for the nameservers and one for the search list when they are
// cut.
func fitLimits(c Config) (Config, []Warning) {
	var warnings []Warning
	if len(c.Servers) > MaxNameservers {
		c.Servers = c.Servers[:MaxNameservers]
		warnings = append(warnings, Warning{ReasonDNSConfigForming,
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(c.Servers, " ")})
	}
	exceeded := false
	if len(c.Searches) > MaxSearchPaths {
		c.Searches, exceeded = c.Searches[:MaxSearchPaths], true
	}
	kept := c.Searches[:0:0]
	for _, s := range c.Searches {
		if len(s) > maxSearchPathLen {
			exceeded = true
			continue
		}
		kept = append(kept, s)
	}
	c.Searches = kept
	if n := len(strings.Join(c.Searches, " ")); n > MaxSearchListChars {
		// The last paths go until the line fits.
		for n > MaxSearchListChars {
			last := c.Searches[len(c.Searches)-1]
			n -= len(last) + 1
			c.Searches = c.Searches[:len(c.Searches)-1]
		}
		exceeded = true
	}
	if exceeded {
		warnings = append(warnings, Warning{ReasonDNSConfigForming,
			"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(c.Searches, " ")})
	}
	return c, warnings
}

// mergeOptions merges the pod's dnsConfig options into the options before
// (mergeDNSOptions): an option of the same name takes the pod's value,
// in its place; the others are appended in the pod's order. (The kubelet
// builds them from a map, in no fixed order; here the order is fixed.)
func mergeOptions(before []string, pod []v1.PodDNSConfigOption) []string {
	out := clone(before)
	index := make(map[string]int, len(out))
	for i, o := range out {
		name, _, _ := strings.Cut(o, ":")
		index[name] = i
	}
	for _, o := range pod {
		opt := o.Name
		if o.Value != nil && *o.Value != "" {
			opt += ":" + *o.Value
		}
		if i, ok := index[o.Name]; ok {
			out[i] = opt
			continue
		}
		index[o.Name] = len(out)
		out = append(out, opt)
	}
	return out
}

// ParseResolvConf reads a resolv.conf as the kubelet does
// (parseResolvConf): nameserver lines accumulate; the last search line
// wins, its domains without a trailing dot; the last options line wins;
// comments and other lines are skipped. A nameserver line without an
// address is an error, returned with what was read.
func ParseResolvConf(data []byte) (Config, error) {
	var c Config
	var errs []error
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, errors.New("nameserver list is empty"))
				continue
			}
			c.Servers = append(c.Servers, f[1])
		case "search":
			c.Searches = nil
			for _, s := range f[1:] {
				c.Searches = append(c.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			c.Options = clone(f[1:])
		}
	}
	return c, errors.Join(errs...)
}

// ReadHostDNS reads the host's resolver configuration from path (the
// node's --resolv-conf): an empty Config for "". The error names the
// file.
func ReadHostDNS(path string) (Config, error) {
	if path == "" {
		return Config{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("resolv.conf: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResolvConf+1))
	if err != nil {
		return Config{}, fmt.Errorf("resolv.conf %s: %w", path, err)
	}
	if len(data) > maxResolvConf {
		return Config{}, fmt.Errorf("resolv.conf %s: longer than %d bytes", path, maxResolvConf)
	}
	c, err := ParseResolvConf(data)
	if err != nil {
		return Config{}, fmt.Errorf("resolv.conf %s: %w", path, err)
	}
	return c, nil
}

func omitDuplicates(s []string) []string {
	seen := make(map[string]bool, len(s))
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func clone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
