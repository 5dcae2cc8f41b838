package podspec

import (
	"fmt"
	"os"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podnet"
)

// MachineHostsFile is the machine's hosts file, which a pod on the host's
// network gets a copy of (podnet.HostNetworkHostsFile). Tests may point
// it elsewhere.
var MachineHostsFile = "/etc/hosts"

// WriteHostsFile writes the pod's hosts file at p (podnet.HostsFileFor,
// reading MachineHostsFile for a pod on the host's network) with podIPs,
// the addresses its own file names it at. Both runtimes' pods get theirs
// so; where the file lives and how it is mounted is each runtime's.
func WriteHostsFile(p string, pod *model.Pod, podIPs []string, clusterDomain string) error {
	var machineHosts []byte
	if pod.Spec.HostNetwork {
		var err error
		if machineHosts, err = os.ReadFile(MachineHostsFile); err != nil {
			return fmt.Errorf("hosts file: %w", err)
		}
	}
	content, err := podnet.HostsFileFor(pod, podIPs, clusterDomain, machineHosts)
	if err != nil {
		return err
	}
	if err := WriteNetworkFile(p, content); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	return nil
}

// WriteNetworkFile writes data to p in place, mode 0644 as the kubelet
// writes its hosts files (whatever the umask): running containers have the
// file mounted, and see the new content.
func WriteNetworkFile(p string, data []byte) error {
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	return os.Chmod(p, 0o644)
}

// PodDNS is the pod's DNS configuration (podnet.DNS) from the host's
// resolver configuration read at s.ResolvConf, and whether it is the
// host's as it is. The resolver's warnings (MissingClusterDNS,
// DNSConfigForming) come back as Warnings of the pod, for the runtime to
// report.
func PodDNS(pod *model.Pod, s podnet.Settings) (podnet.Config, bool, []runtime.Warning, error) {
	host, err := podnet.ReadHostDNS(s.ResolvConf)
	if err != nil {
		return podnet.Config{}, false, nil, err
	}
	conf, isHost, ws := podnet.DNS(pod.Pod, s, host)
	warnings := make([]runtime.Warning, len(ws))
	for i, w := range ws {
		warnings[i] = runtime.Warning{PodUID: pod.UID, Reason: runtime.WarningReason(w.Reason), Message: w.Message}
	}
	return conf, isHost, warnings, nil
}
