package conformance

import "regexp"

// Cause is one known reason for specs to fail on podward, with what it
// takes to pass them.
type Cause struct {
	Name string
	// Rejection matches podward's refusal of one of the spec's pods (the
	// err of its "rejecting a pod this node cannot run" log line).
	Rejection *regexp.Regexp
	// Message matches the spec's failure message, Spec its name; either
	// is enough, when the node refused none of its pods.
	Message, Spec *regexp.Regexp
	// Note says what podward lacks or does differently, and the issue
	// that changes it.
	Note string
}

// Known are the causes of the failures seen so far, most specific first.
var Known = []Cause{
	{
		Name:      "seLinuxOptions refused on the CRI runtime",
		Rejection: regexp.MustCompile(`seLinuxOptions`),
		Note:      "issue 20: passed to the CRI runtime as the kubelet does",
	},
	{
		Name:      "hostAliases refused on the CRI runtime",
		Rejection: regexp.MustCompile(`hostAliases`),
		Note:      "issue 23 (/etc/hosts as the kubelet writes it)",
	},
	{
		Name:      "a pod for another OS refused without the reason PodOSNotSupported",
		Rejection: regexp.MustCompile(`spec\.os\.name`),
		Note:      "issue 20",
	},
	{
		Name: "hostnameOverride not honoured",
		Spec: regexp.MustCompile(`Override hostname of Pod`),
		Note: "issue 23",
	},
	{
		Name:    "/etc/hosts not kubelet-managed",
		Message: regexp.MustCompile(`/etc/hosts file should be kubelet managed`),
		Spec:    regexp.MustCompile(`KubeletManagedEtcHosts`),
		Note:    "issue 23",
	},
	{
		Name: "activeDeadlineSeconds lowered on a running pod not enforced",
		Spec: regexp.MustCompile(`activeDeadlineSeconds`),
		Note: "issue 20",
	},
	{
		Name: "readinessGates not honoured",
		Spec: regexp.MustCompile(`readiness gates`),
		Note: "issue 20",
	},
	{
		Name: "no ProbeWarning event for a probe's non-local redirect",
		Spec: regexp.MustCompile(`non-local redirect`),
		Note: "issue 20",
	},
	{
		Name:    "an unsafe sysctl not rejected (SysctlForbidden)",
		Message: regexp.MustCompile(`SysctlForbidden`),
		Spec:    regexp.MustCompile(`\[sig-node\] Sysctls .*unsafe`),
		Note:    "issue 20",
	},
	{
		Name:    "this machine's kernel has no dummy link type",
		Message: regexp.MustCompile(`RTNETLINK answers: Operation not supported`),
		Note:    "the machine's, not podward's: `ip link add dummy1 type dummy` fails on the host too",
	},
}
