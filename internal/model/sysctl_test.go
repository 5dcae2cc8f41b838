package model

import "testing"

// The kubelet's cases (component-helpers node/util/sysctl, NormalizeName):
// a name whose first separator is a slash has slashes and dots swapped.
func TestNormalizeSysctlName(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"kernel.shm_rmid_forced":            "kernel.shm_rmid_forced",
		"kernel/shm_rmid_forced":            "kernel.shm_rmid_forced",
		"net.ipv4.conf.eno2/100.rp_filter":  "net.ipv4.conf.eno2/100.rp_filter",
		"net/ipv4/conf/eno2.100/rp_filter":  "net.ipv4.conf.eno2/100.rp_filter",
		"net/ipv4/ip_local_port_range":      "net.ipv4.ip_local_port_range",
		"net/*":                             "net.*",
		"vm":                                "vm",
		"net.ipv4.conf.eno2.100.rp_filter":  "net.ipv4.conf.eno2.100.rp_filter",
		"net/ipv4/conf/eno2/100/rp_filter/": "net.ipv4.conf.eno2.100.rp_filter.",
	} {
		if got := NormalizeSysctlName(in); got != want {
			t.Errorf("NormalizeSysctlName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSysctlNamespaceOf(t *testing.T) {
	for in, want := range map[string]struct {
		ns      SysctlNamespace
		name    string
		pattern bool
	}{
		"kernel.shm_rmid_forced":   {SysctlIPC, "kernel.shm_rmid_forced", false},
		"kernel.shm*":              {SysctlIPC, "kernel.shm", true},
		"kernel.msg*":              {SysctlIPC, "kernel.msg", true},
		"kernel.sem":               {SysctlIPC, "kernel.sem", false},
		"fs.mqueue.msg_max":        {SysctlIPC, "fs.mqueue.msg_max", false},
		"fs.mqueue.*":              {SysctlIPC, "fs.mqueue.", true},
		"net.ipv4.tcp_rmem":        {SysctlNet, "net.ipv4.tcp_rmem", false},
		"net/ipv4/tcp_rmem":        {SysctlNet, "net.ipv4.tcp_rmem", false},
		"net.*":                    {SysctlNet, "net.", true},
		"net":                      {"", "net", false},
		"kernel.domainname":        {SysctlUTS, "kernel.domainname", false},
		"user.max_user_namespaces": {SysctlUser, "user.max_user_namespaces", false},
		"kernel.panic":             {"", "kernel.panic", false},
		"vm.*":                     {"", "vm.", true},
	} {
		ns, name, pattern := SysctlNamespaceOf(in)
		if ns != want.ns || name != want.name || pattern != want.pattern {
			t.Errorf("SysctlNamespaceOf(%q) = %q, %q, %v, want %q, %q, %v", in, ns, name, pattern, want.ns, want.name, want.pattern)
		}
	}
}

func TestValidSysctlPattern(t *testing.T) {
	for s, want := range map[string]bool{
		"net.ipv4.tcp_rmem": true,
		"net.*":             true,
		"net/ipv4/*":        true,
		"kernel.shm*":       true,
		"*":                 true,
		"":                  false,
		"net..foo":          false,
		"Net.ipv4":          false,
		"net.*.foo":         false,
		"net.ipv4-":         false,
	} {
		if got := ValidSysctlPattern(s); got != want {
			t.Errorf("ValidSysctlPattern(%q) = %v, want %v", s, got, want)
		}
	}
}
