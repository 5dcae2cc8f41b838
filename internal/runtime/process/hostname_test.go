package process

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// A container's host name is its pod's, in a UTS namespace of its own, as
// a CRI runtime's sandbox gives it (the kubelet's
// GeneratePodHostNameAndDomain, kubelet_pods.go: spec.hostnameOverride,
// else spec.hostname, else the pod's name; spec.subdomain adds the domain
// only with setHostnameAsFQDN), and so is that of a
// command run in its context (hooks, probes). A pod on the host's network
// sees the host's name. The host's own name never changes (issue 11).
func TestHostnameIsThePods(t *testing.T) {
	if !launch.CanUnshareUTS() {
		t.Skip("needs UTS namespaces (root)")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const script = `echo "uts=$(cat /proc/sys/kernel/hostname) env=$HOSTNAME"`
	tests := map[string]struct {
		hostname, subdomain string
		override            *string
		fqdn                bool
		hostNetwork         bool
		want                string
	}{
		"hostnameOverride":    {hostname: "db-0", override: ptr.To("my.host"), want: "uts=my.host env=my.host"},
		"setHostnameAsFQDN":   {hostname: "db-0", subdomain: "db", fqdn: true, want: "uts=db-0.db.default.svc.cluster.local env=db-0.db.default.svc.cluster.local"},
		"the pod's name":      {want: "uts=web env=web"},
		"spec.hostname":       {hostname: "db-0", subdomain: "db", want: "uts=db-0 env=db-0"},
		"on the host network": {hostNetwork: true, want: "uts=" + host + " env=" + host},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarnessWith(t, Config{Root: t.TempDir(), DNS: podnet.Settings{ClusterDomain: "cluster.local"}})
			pod := newPod(t, shell("main", script))
			pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.HostNetwork = tc.hostname, tc.subdomain, tc.hostNetwork
			pod.Spec.HostnameOverride, pod.Spec.SetHostnameAsFQDN = tc.override, &tc.fqdn
			h.prepare(pod)
			cont, ev := h.run(pod, 0)
			if ev.Exit.ExitCode != 0 {
				t.Fatalf("exit code %d", ev.Exit.ExitCode)
			}
			if got := logLines(t, cont.LogPath); len(got) != 1 || got[0] != "stdout "+tc.want {
				t.Errorf("container: %q, want %q", got, tc.want)
			}
			ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
			out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"/bin/sh", "-c", script})
			if err != nil || code != 0 || strings.TrimSpace(string(out)) != tc.want {
				t.Errorf("exec: %q, %d, %v; want %q", out, code, err, tc.want)
			}
		})
	}
	if now, _ := os.Hostname(); now != host {
		t.Errorf("the host's name changed from %q to %q", host, now)
	}
}

// A working directory that does not exist fails the start as itself, not
// as a missing command (which is what exec says), with and without the
// init helper (a mount namespace, a UTS namespace).
func TestMissingWorkingDir(t *testing.T) {
	for name, helper := range map[string]bool{"direct": false, "init helper": true} {
		t.Run(name, func(t *testing.T) {
			if helper && !launch.CanUnshareUTS() {
				t.Skip("the init helper needs root")
			}
			h := newHarnessWith(t, Config{Root: t.TempDir(), DNS: podnet.Settings{ClusterDomain: "cluster.local"}})
			h.r.uts = helper
			dir := t.TempDir() + "/missing"
			c := shell("main", "true")
			c.WorkingDir = dir
			pod := newPod(t, c)
			h.prepare(pod)
			ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
			_, err := h.r.StartContainer(context.Background(), pod, ref, 0)
			want := `workingDir "` + dir + `": no such file or directory`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("StartContainer = %v, want an error with %q", err, want)
			}
			_, _, err = h.r.Exec(context.Background(), pod, ref, []string{"true"})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Exec = %v, want an error with %q", err, want)
			}
		})
	}
}
