//go:build !linux

package cluster

import "errors"

// DetectMachine describes this host; it reads /proc and /etc, so only on
// Linux. Elsewhere, give NodeConfig.Machine.
func DetectMachine(rootDir string) (Machine, error) {
	return Machine{}, errors.New("detecting the machine needs Linux; set NodeConfig.Machine")
}
