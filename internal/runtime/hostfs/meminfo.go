package hostfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemoryCapacity is the machine's memory in bytes, /proc/meminfo's MemTotal,
// as cAdvisor reports it to the kubelet (the base of a Burstable
// container's oom_score_adj).
func MemoryCapacity() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo: MemTotal: %w", err)
		}
		return kb * 1024, nil
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return 0, errors.New("/proc/meminfo: no MemTotal")
}
