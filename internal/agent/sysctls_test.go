package agent

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
)

// The kubelet's safe list depends on the kernel (safe_sysctls.go,
// getSafeSysctlAllowlist): a sysctl a kernel does not namespace yet is
// left out, and so is every one that needs a release it cannot read.
func TestSafeSysctls(t *testing.T) {
	always := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	for release, want := range map[string][]string{
		"":           always,
		"garbage":    always,
		"3.10.0":     always,
		"4.5.0-42":   append(slices.Clone(always), "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"),
		"4.14.1":     append(slices.Clone(always), "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_notsent_lowat"),
		"6.18.44-fc": append(slices.Clone(always), "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"),
	} {
		if got := SafeSysctls(release); !slices.Equal(got, want) {
			t.Errorf("SafeSysctls(%q) = %q, want %q", release, got, want)
		}
	}
	// Every safe sysctl is namespaced: the kubelet's list builds.
	if _, err := NewSysctlAllowlist("99.0", nil); err != nil {
		t.Fatal(err)
	}
}

// The kubelet's sysctl admission (pkg/kubelet/sysctl/allowlist.go): the
// safe sysctls and --allowed-unsafe-sysctls pass, names written with
// slashes are read as the kubelet reads them, and a sysctl of a namespace
// the pod shares with the host is forbidden; the first forbidden sysctl is
// the rejection, reason SysctlForbidden.
func TestSysctlAdmission(t *testing.T) {
	w, err := NewSysctlAllowlist("6.18.44", []string{"kernel.msg*", "net.core.somaxconn", "user.max_user_namespaces", "fs/mqueue/*"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		sysctls          []string
		hostNet, hostIPC bool
		hostUsers        *bool
		want             string // the message, "" when admitted
	}{
		"none":                         {},
		"safe":                         {sysctls: []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_rmem"}},
		"safe, with slashes":           {sysctls: []string{"net/ipv4/ip_local_port_range", "kernel/shm_rmid_forced"}},
		"allowed unsafe":               {sysctls: []string{"net.core.somaxconn", "kernel.msgmax", "fs.mqueue.msg_max"}},
		"unsafe":                       {sysctls: []string{"kernel.shm_rmid_forced", "net.core.rmem_max", "kernel.sem"}, want: `forbidden sysctl: "net.core.rmem_max" not allowlisted`},
		"unsafe, with slashes":         {sysctls: []string{"net/ipv4/conf/eno2.100/rp_filter"}, want: `forbidden sysctl: "net.ipv4.conf.eno2/100.rp_filter" not allowlisted`},
		"not namespaced":               {sysctls: []string{"vm.swappiness"}, want: `forbidden sysctl: "vm.swappiness" not allowlisted`},
		"network with hostNetwork":     {sysctls: []string{"kernel.shm_rmid_forced", "net/ipv4/ip_local_port_range"}, hostNet: true, want: `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		"allowed pattern, hostNetwork": {sysctls: []string{"net.core.somaxconn"}, hostNet: true, want: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		"IPC with hostNetwork":         {sysctls: []string{"kernel.shm_rmid_forced"}, hostNet: true},
		"IPC with hostIPC":             {sysctls: []string{"kernel.shm_rmid_forced"}, hostIPC: true, want: `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		"IPC pattern with hostIPC":     {sysctls: []string{"kernel.msgmnb"}, hostIPC: true, want: `forbidden sysctl: "kernel.msgmnb" not allowed with host IPC enabled`},
		"network with hostIPC":         {sysctls: []string{"net.ipv4.tcp_syncookies"}, hostIPC: true},
		"user, host's user namespace":  {sysctls: []string{"user.max_user_namespaces"}, want: `forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		"user, hostUsers true":         {sysctls: []string{"user.max_user_namespaces"}, hostUsers: new(true), want: `forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		"user, own user namespace":     {sysctls: []string{"user.max_user_namespaces"}, hostUsers: new(false)},
	} {
		t.Run(name, func(t *testing.T) {
			pod := named(t, "sysctls")
			pod.Spec.HostNetwork, pod.Spec.HostIPC, pod.Spec.HostUsers = tc.hostNet, tc.hostIPC, tc.hostUsers
			pod.Spec.SecurityContext = &v1.PodSecurityContext{}
			for _, s := range tc.sysctls {
				pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: s, Value: "1"})
			}
			why := w.admit(pod)
			switch {
			case tc.want == "" && why != nil:
				t.Fatalf("rejected: %v", why)
			case tc.want != "" && (why == nil || why.Reason != events.SysctlForbidden || why.Message != tc.want):
				t.Fatalf("rejection %v, want SysctlForbidden: %s", why, tc.want)
			}
		})
	}
}

// A pod that sets a sysctl the node does not allow is created Failed, as
// the kubelet rejects it, and nothing of it runs; one that sets an allowed
// sysctl runs. The agent's allowlist is its Config's; without one, the
// safe sysctls.
func TestCreateWithForbiddenSysctlIsRejected(t *testing.T) {
	allow, err := NewSysctlAllowlist("6.18.44", []string{"net.core.*"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), Sysctls: allow})
	t.Cleanup(func() { cancel(); a.Wait() })
	plain, _ := newAgent(t)

	withSysctl := func(name, sysctl string) *model.Pod {
		p := named(t, name)
		p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: sysctl, Value: "128"}}}
		return p
	}
	const msg = `forbidden sysctl: "net.core.somaxconn" not allowlisted`
	for _, tc := range []struct {
		a      *Agent
		pod    *model.Pod
		reason string
	}{
		{a, withSysctl("allowed", "net/core/somaxconn"), ""},
		{a, withSysctl("safe", "net.ipv4.tcp_keepalive_time"), ""},
		{a, withSysctl("forbidden", "kernel.sem"), "SysctlForbidden"},
		{plain, withSysctl("default-forbidden", "net.core.somaxconn"), "SysctlForbidden"},
		{plain, withSysctl("default-safe", "net.ipv4.tcp_rmem"), ""},
	} {
		p, err := tc.a.Create(tc.pod)
		if err != nil {
			t.Fatalf("%s: %v", tc.pod.Name, err)
		}
		got, _, _ := tc.a.Get(p.UID)
		if tc.reason == "" {
			if isRejected(p) {
				t.Fatalf("%s: rejected: %+v", tc.pod.Name, got.Status)
			}
			waitRunning(t, tc.a, tc.pod.Name)
			continue
		}
		if got.Status.Phase != v1.PodFailed || got.Status.Reason != tc.reason || !strings.HasPrefix(got.Status.Message, "Pod was rejected: forbidden sysctl: ") {
			t.Fatalf("%s: status %+v, want Failed, %s", tc.pod.Name, got.Status, tc.reason)
		}
		if tc.pod.Name == "default-forbidden" && got.Status.Message != "Pod was rejected: "+msg {
			t.Fatalf("message %q, want the kubelet's %q", got.Status.Message, msg)
		}
	}
	if n := rt.CountCalls("prepare"); n != 2 {
		t.Fatalf("prepared %d pods, want the 2 admitted: %q", n, rt.Calls())
	}
	var rejected *RejectedError
	if err := a.PodRejection(withSysctl("x", "kernel.sem")); !errors.As(err, &rejected) || rejected.Reason != events.SysctlForbidden {
		t.Fatalf("PodRejection: %v", err)
	}
}
