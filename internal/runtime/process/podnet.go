package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// The pod's network files, in its directory: what its containers find at
// /etc/resolv.conf and /etc/hosts.
func (r *Runtime) resolvConfFile(uid types.UID) string {
	return filepath.Join(r.podDir(uid), "resolv.conf")
}

func (r *Runtime) hostsFile(uid types.UID) string { return filepath.Join(r.podDir(uid), "etc-hosts") }

// writeNetworkFiles writes the pod's resolv.conf and hosts file, as the
// kubelet makes them (podnet), for its containers to mount: PreparePod
// calls it. The resolver's warnings (MissingClusterDNS, DNSConfigForming)
// become Warnings of the pod. The pods share the host's network, so their
// IP is localIP: the hosts file names the pod's host name at 127.0.0.1, as
// the kubelet's names it at the pod's IP, and honours hostAliases. A pod on
// the host's network gets the host's hosts file with its aliases, and
// keeps the host's /etc/resolv.conf when its DNS is the host's as it is.
// Without root, the containers have no mount namespace of their own to
// mount them in: nothing is written and they see the host's files.
func (r *Runtime) writeNetworkFiles(pod *model.Pod) error {
	if r.euid() != 0 {
		return nil
	}
	conf, isHost, warnings, err := podspec.PodDNS(pod, r.dns)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		r.warn(w, r.log.With("pod", pod.Key(), "podUID", pod.UID))
	}
	resolv := r.resolvConfFile(pod.UID)
	if pod.Spec.HostNetwork && isHost && r.dns.ResolvConf == podnet.EtcResolvConf {
		if err := os.Remove(resolv); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("resolv.conf: %w", err)
		}
	} else if err := podspec.WriteNetworkFile(resolv, conf.ResolvConf()); err != nil {
		return fmt.Errorf("resolv.conf: %w", err)
	}
	return podspec.WriteHostsFile(r.hostsFile(pod.UID), pod, []string{localIP}, r.dns.ClusterDomain)
}

// networkMounts are the mounts of the pod's network files into a container
// (which already mounts mounts): its resolv.conf read-only at /etc/resolv.conf,
// its hosts file at /etc/hosts, each when writeNetworkFiles wrote it and
// nothing of mounts is at its target already (as the kubelet's
// podnet.MountsHostsFile: these pods always have an IP, localIP, so only
// a volumeMount at /etc/hosts keeps the file off). It also returns the
// mountpoints it created on the host.
func (r *Runtime) networkMounts(pod *model.Pod, mounts []launch.Mount) ([]launch.Mount, []shim.Mountpoint, error) {
	var out []launch.Mount
	var created []shim.Mountpoint
	files := []struct {
		src, target string
		readOnly    bool
	}{
		{r.resolvConfFile(pod.UID), podnet.EtcResolvConf, true},
		{r.hostsFile(pod.UID), podnet.EtcHosts, false},
	}
	for _, f := range files {
		if mountedAt(mounts, f.target) {
			continue
		}
		if _, err := os.Stat(f.src); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, nil, err
		}
		used, err := r.mountpoints.ensure(pod.UID, f.target, false)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: mountpoint: %w", f.target, err)
		}
		created = append(created, used...)
		out = append(out, launch.Mount{Source: f.src, Target: f.target, ReadOnly: f.readOnly})
	}
	return out, created, nil
}

func mountedAt(mounts []launch.Mount, target string) bool {
	for _, m := range mounts {
		if m.Target == target {
			return true
		}
	}
	return false
}
