package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procRoot is where the /proc readers look; tests point it at a fake tree.
var procRoot = "/proc"

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// the kernel fixes at 100 for user space on every architecture Go runs
// podward on, whatever its internal HZ.
const userHZ = 100

// CPUTimes are a process's CPU times from /proc/PID/stat: its own, and
// those of its children it has waited for.
type CPUTimes struct {
	User, System           time.Duration
	ChildUser, ChildSystem time.Duration
}

// Own is the process's own CPU time.
func (c CPUTimes) Own() time.Duration { return c.User + c.System }

// WithChildren adds the CPU time of its reaped children (an exec probe's
// helper, a hook's process) to its own.
func (c CPUTimes) WithChildren() time.Duration { return c.Own() + c.ChildUser + c.ChildSystem }

// ReadCPU reads pid's CPU times.
func ReadCPU(pid int) (CPUTimes, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return CPUTimes{}, err
	}
	return parseStat(string(b))
}

// parseStat reads the CPU times of a /proc/PID/stat line. The command name
// (field 2) is in parentheses and may hold spaces and parentheses itself,
// so the fields are counted from the last ')'.
func parseStat(text string) (CPUTimes, error) {
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return CPUTimes{}, errors.New("stat: no command name")
	}
	// fields[0] is field 3 (state); utime is field 14.
	fields := strings.Fields(text[end+1:])
	if len(fields) < 15 {
		return CPUTimes{}, fmt.Errorf("stat: %d fields after the command name, want at least 15", len(fields))
	}
	var ticks [4]time.Duration
	for i := range ticks {
		v, err := strconv.ParseUint(fields[11+i], 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("stat field %d: %w", 14+i, err)
		}
		ticks[i] = time.Duration(v) * time.Second / userHZ
	}
	return CPUTimes{User: ticks[0], System: ticks[1], ChildUser: ticks[2], ChildSystem: ticks[3]}, nil
}

// Status is what the bench reads of /proc/PID/status.
type Status struct {
	RSSBytes int64 // VmRSS
	// PeakRSSBytes is VmHWM: the largest VmRSS since the process started.
	PeakRSSBytes int64
	// AnonBytes and FileBytes split VmRSS (RssAnon; RssFile with
	// RssShmem): the process's own memory, and the pages of files it maps
	// (its binary, the state file's mmap) that the kernel may drop.
	AnonBytes, FileBytes int64
	Threads              int
}

// ReadStatus reads pid's resident set size and thread count.
func ReadStatus(pid int) (Status, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return Status{}, err
	}
	return parseStatus(string(b))
}

func parseStatus(text string) (Status, error) {
	var s Status
	var haveRSS, haveThreads bool
	for line := range strings.SplitSeq(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS":
			kb, err := parseKB(val)
			if err != nil {
				return Status{}, fmt.Errorf("status VmRSS: %w", err)
			}
			s.RSSBytes, haveRSS = kb, true
		case "VmHWM":
			kb, err := parseKB(val)
			if err != nil {
				return Status{}, fmt.Errorf("status VmHWM: %w", err)
			}
			s.PeakRSSBytes = kb
		case "RssAnon", "RssFile", "RssShmem":
			kb, err := parseKB(val)
			if err != nil {
				return Status{}, fmt.Errorf("status %s: %w", key, err)
			}
			if key == "RssAnon" {
				s.AnonBytes = kb
			} else {
				s.FileBytes += kb
			}
		case "Threads":
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil {
				return Status{}, fmt.Errorf("status Threads: %w", err)
			}
			s.Threads, haveThreads = n, true
		}
	}
	if !haveRSS || !haveThreads {
		return Status{}, errors.New("status: no VmRSS or no Threads (a zombie?)")
	}
	return s, nil
}

// parseKB reads a "  1234 kB" value as bytes.
func parseKB(val string) (int64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(val), " ")
	if unit != "kB" {
		return 0, fmt.Errorf("unit %q, want kB", unit)
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	return v * 1024, nil
}

// ReadPSS reads pid's proportional set size from /proc/PID/smaps_rollup:
// its private memory plus its share of what it shares (a re-executed
// binary's text, shared with every other copy).
func ReadPSS(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, err
	}
	return parseRollupPSS(string(b))
}

func parseRollupPSS(text string) (int64, error) {
	for line := range strings.SplitSeq(text, "\n") {
		if val, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := parseKB(val)
			if err != nil {
				return 0, fmt.Errorf("smaps_rollup Pss: %w", err)
			}
			return kb, nil
		}
	}
	return 0, errors.New("smaps_rollup: no Pss line")
}

// CountFDs is the number of pid's open file descriptors.
func CountFDs(pid int) (int, error) {
	entries, err := os.ReadDir(filepath.Join(procRoot, strconv.Itoa(pid), "fd"))
	if err != nil {
		return 0, err
	}
	return len(entries), nil
}

// Proc is a process found by FindProcs.
type Proc struct {
	PID  int
	Argv []string
}

// FindProcs lists the processes for which match says yes, given their
// argv and a function that reads their environment (only when asked: it
// is the more expensive read). Processes that vanish meanwhile, and those
// it may not read, are skipped.
func FindProcs(match func(argv []string, environ func() []string) bool) ([]Proc, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(procRoot, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		argv := splitNUL(b)
		environ := func() []string {
			env, err := os.ReadFile(filepath.Join(dir, "environ"))
			if err != nil {
				return nil
			}
			return splitNUL(env)
		}
		if match(argv, environ) {
			out = append(out, Proc{PID: pid, Argv: argv})
		}
	}
	return out, nil
}

func splitNUL(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), len(b)+1)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// shimOf matches the process runtime's shims under root: podward-shim
// (or podward re-executed, without one) as `podward-shim ROOT/pods/...`,
// or started ahead as a spare, `podward-shim spare ROOT/process`, which
// keeps that argv once it holds a container. Other agents' shims on the same machine do not
// match.
func shimOf(root string) func(argv []string, _ func() []string) bool {
	prefix := filepath.Clean(root) + "/"
	return func(argv []string, _ func() []string) bool {
		if len(argv) < 2 || argv[0] != "podward-shim" {
			return false
		}
		if argv[1] == "spare" {
			return len(argv) >= 3 && strings.HasPrefix(filepath.Clean(argv[2])+"/", prefix)
		}
		return strings.HasPrefix(argv[1], prefix)
	}
}

// Shims are the shims under a root, split by whether they hold a
// container (they are its parent) or are spares idle until a start.
type Shims struct {
	Holding, Idle []Proc
}

// All is every shim, holding or idle.
func (s Shims) All() []Proc { return append(append([]Proc(nil), s.Holding...), s.Idle...) }

// FindShims lists the shims under root. A shim holds a container when a
// process has it as its parent; a spare started ahead has none until a
// start hands it its instance (and a shim whose container just exited has
// none either, for the moment it takes to write the exit).
func FindShims(root string) (Shims, error) {
	found, err := FindProcs(shimOf(root))
	if err != nil || len(found) == 0 {
		return Shims{}, err
	}
	parents, err := parentPIDs()
	if err != nil {
		return Shims{}, err
	}
	var s Shims
	for _, p := range found {
		if parents[p.PID] {
			s.Holding = append(s.Holding, p)
		} else {
			s.Idle = append(s.Idle, p)
		}
	}
	return s, nil
}

// parentPIDs is the set of PIDs that are some process's parent.
func parentPIDs() (map[int]bool, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	parents := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := readStateAndParent(pid); ok {
			if n, err := strconv.Atoi(ppid); err == nil {
				parents[n] = true
			}
		}
	}
	return parents, nil
}

// readStateAndParent is pid's state letter and parent PID, from
// /proc/PID/stat (after the command name, which may hold spaces).
func readStateAndParent(pid int) (state, ppid string, ok bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", "", false
	}
	end := strings.LastIndexByte(string(b), ')')
	if end < 0 {
		return "", "", false
	}
	f := strings.Fields(string(b)[end+1:])
	if len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// markedWith matches the processes whose environment holds kv: the bench
// gives every container (and every floor process) its run's marker.
func markedWith(kv string) func(_ []string, environ func() []string) bool {
	return func(_ []string, environ func() []string) bool {
		for _, e := range environ() {
			if e == kv {
				return true
			}
		}
		return false
	}
}

// describeProc is "PID (parent PPID, state S): ARGV" for a report, as far
// as /proc still tells.
func describeProc(p Proc) string {
	state, ppid, ok := readStateAndParent(p.PID)
	if !ok {
		state, ppid = "?", "?"
	}
	return fmt.Sprintf("%d (parent %s, state %s): %s", p.PID, ppid, state, strings.Join(p.Argv, " "))
}
