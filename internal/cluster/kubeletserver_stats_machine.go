package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/podward/podward/internal/runtime"
)

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// Linux architecture podward builds for.
const userHZ = 100

// machineUsage is the machine's usage from /proc, as cAdvisor's root container
// reports it.
type machineUsage struct {
	bootTime       time.Time
	cpu            runtime.CPUUsage
	memory         runtime.MemoryUsage
	availableBytes uint64
}

// readMachineUsage reads /proc/stat and /proc/meminfo, stamped now.
func readMachineUsage(now time.Time) (machineUsage, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineUsage{}, fmt.Errorf("node stats: %w", err)
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return machineUsage{}, fmt.Errorf("node stats: %w", err)
	}
	return parseMachineUsage(stat, meminfo, now)
}

// parseMachineUsage is the machine's usage from the contents of /proc/stat and
// /proc/meminfo.
func parseMachineUsage(stat, meminfo []byte, now time.Time) (machineUsage, error) {
	u := machineUsage{cpu: runtime.CPUUsage{Time: now}, memory: runtime.MemoryUsage{Time: now}}
	var err error
	if u.cpu.UsageCoreNanoSeconds, u.bootTime, err = parseProcStat(stat); err != nil {
		return machineUsage{}, err
	}
	if err := parseMeminfo(meminfo, &u); err != nil {
		return machineUsage{}, err
	}
	return u, nil
}

// parseProcStat reads the machine's CPU time from /proc/stat, as the busy
// jiffies of its "cpu" line (user, nice, system, irq, softirq, steal: not
// idle nor iowait), and its boot time.
func parseProcStat(stat []byte) (cpuNanos uint64, boot time.Time, err error) {
	var haveCPU bool
	s := bufio.NewScanner(bytes.NewReader(stat))
	for s.Scan() {
		f := strings.Fields(s.Text())
		switch {
		case len(f) >= 9 && f[0] == "cpu":
			var jiffies uint64
			for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
				n, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return 0, time.Time{}, fmt.Errorf("node stats: /proc/stat: %w", err)
				}
				jiffies += n
			}
			cpuNanos, haveCPU = jiffies*(1e9/userHZ), true
		case len(f) == 2 && f[0] == "btime":
			sec, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, time.Time{}, fmt.Errorf("node stats: /proc/stat: %w", err)
			}
			boot = time.Unix(sec, 0)
		}
	}
	if !haveCPU {
		return 0, time.Time{}, fmt.Errorf("node stats: /proc/stat has no cpu line")
	}
	return cpuNanos, boot, nil
}

// parseMeminfo sets u's memory from /proc/meminfo: its usage as the root
// memory cgroup's (total less free), its working set less the inactive
// file cache, as cAdvisor's.
func parseMeminfo(meminfo []byte, u *machineUsage) error {
	mem := map[string]uint64{}
	s := bufio.NewScanner(bytes.NewReader(meminfo))
	for s.Scan() {
		// MemTotal:       24589344 kB
		k, v, ok := strings.Cut(s.Text(), ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) == 2 && f[1] == "kB" {
			n *= 1024
		}
		mem[k] = n
	}
	total, ok := mem["MemTotal"]
	if !ok {
		return fmt.Errorf("node stats: /proc/meminfo has no MemTotal")
	}
	used := total - min(mem["MemFree"], total)
	u.memory.UsageBytes = used
	u.memory.WorkingSetBytes = used - min(mem["Inactive(file)"], used)
	u.memory.RSSBytes = mem["AnonPages"]
	u.availableBytes = mem["MemAvailable"]
	return nil
}
