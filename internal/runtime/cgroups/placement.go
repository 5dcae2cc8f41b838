package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killRounds bounds how often Kill empties a v1 cgroup: each round kills
// the processes it lists, and a process that forked meanwhile leaves a
// child for the next.
const killRounds = 64

// Placement is one cgroup as the processes placed in it see it: its
// directories, plain data that goes into an instance's spec (JSON), so
// that the shim (or the exec path) places a process without knowing the
// layout or the host's hierarchies. The zero Placement is no cgroup.
type Placement struct {
	// Unified is the cgroup's directory on v2.
	Unified string `json:"unified,omitempty"`
	// V1 is, on v1, the cgroup in each controller's hierarchy.
	V1 map[string]V1Dir `json:"v1,omitempty"`
}

// V1Dir is a cgroup in one v1 hierarchy.
type V1Dir struct {
	// Mount is the hierarchy's mount point.
	Mount string `json:"mount"`
	// Path is the cgroup's path in it, from its root ("/podward/pod<UID>").
	Path string `json:"path"`
}

// IsZero says whether p is no cgroup.
func (p Placement) IsZero() bool { return p.Unified == "" && len(p.V1) == 0 }

// dirs are p's directories, one per hierarchy, sorted; co-mounted v1
// controllers share one.
func (p Placement) dirs() []string {
	if p.Unified != "" {
		return []string{p.Unified}
	}
	var dirs []string
	for _, d := range p.V1 {
		dir := filepath.Join(d.Mount, d.Path)
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// Enter moves the process pid (all its threads) into p. A process forked
// meanwhile by pid stays where it was: Enter is for a process that does
// not run its command yet (the shim itself, an exec's init helper waiting
// for its go-ahead).
func (p Placement) Enter(pid int) error {
	for _, d := range p.dirs() {
		if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("enter cgroup: %w", err)
		}
	}
	return nil
}

// EnterThread moves the calling OS thread, which the caller has locked,
// into p, on v1 only (v2 places whole processes: fork into FD instead), so
// that a process it forks starts in p. restore moves the thread back
// where it was.
func (p Placement) EnterThread() (restore func() error, err error) {
	if p.Unified != "" {
		return nil, errors.New("enter cgroup: cgroup v2 does not place threads")
	}
	tid := strconv.Itoa(unix.Gettid())
	back, err := threadCgroups()
	if err != nil {
		return nil, err
	}
	var undo []string
	restore = func() error {
		var errs []error
		for _, d := range undo {
			errs = append(errs, writeFile(d, "tasks", tid))
		}
		return errors.Join(errs...)
	}
	seen := map[string]bool{}
	for c, d := range p.V1 {
		if seen[d.Mount] {
			continue
		}
		seen[d.Mount] = true
		if orig, ok := back[c]; ok {
			undo = append(undo, filepath.Join(d.Mount, orig))
		}
		if err := writeFile(filepath.Join(d.Mount, d.Path), "tasks", tid); err != nil {
			return nil, errors.Join(fmt.Errorf("enter cgroup: %w", err), restore())
		}
	}
	return restore, nil
}

// threadCgroups is the calling thread's cgroup in each v1 controller.
func threadCgroups() (map[string]string, error) {
	raw, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("enter cgroup: %w", err)
	}
	cgs := make(map[string]string)
	for _, line := range strings.Split(string(raw), "\n") {
		// 4:memory:/process_api/abc
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			cgs[c] = parts[2]
		}
	}
	return cgs, nil
}

// FD opens p's v2 directory for a fork into it (clone3 with
// CLONE_INTO_CGROUP: syscall.SysProcAttr's UseCgroupFD and CgroupFD). The
// caller closes it.
func (p Placement) FD() (int, error) {
	if p.Unified == "" {
		return -1, errors.New("enter cgroup: cgroup v1 has no fork into a cgroup")
	}
	fd, err := unix.Open(p.Unified, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open cgroup", Path: p.Unified, Err: err}
	}
	return fd, nil
}

// memoryDir is p's directory in the memory controller.
func (p Placement) memoryDir() string {
	if p.Unified != "" {
		return p.Unified
	}
	d := p.V1["memory"]
	return filepath.Join(d.Mount, d.Path)
}

// OOMKills is how many processes of p the OOM killer killed, from its
// own counter: memory.events' oom_kill on v2, memory.oom_control's on v1
// (as runc and containerd learn that a container was OOM-killed).
func (p Placement) OOMKills() (uint64, error) {
	name := "memory.oom_control"
	if p.Unified != "" {
		name = "memory.events"
	}
	return readKey(filepath.Join(p.memoryDir(), name), "oom_kill")
}

// CPUUsage is the CPU time p's processes used: cpu.stat's usage_usec on
// v2, cpuacct.usage on v1.
func (p Placement) CPUUsage() (time.Duration, error) {
	if p.Unified != "" {
		us, err := readKey(filepath.Join(p.Unified, "cpu.stat"), "usage_usec")
		return time.Duration(us) * time.Microsecond, err
	}
	d := p.V1["cpuacct"]
	raw, err := os.ReadFile(filepath.Join(d.Mount, d.Path, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	return time.Duration(ns), err
}

// MemoryUsage is the memory p's processes use: memory.current on v2,
// memory.usage_in_bytes on v1.
func (p Placement) MemoryUsage() (uint64, error) {
	name := "memory.usage_in_bytes"
	if p.Unified != "" {
		name = "memory.current"
	}
	raw, err := os.ReadFile(filepath.Join(p.memoryDir(), name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
}

// Procs lists the processes in p (in its memory cgroup on v1).
func (p Placement) Procs() ([]int, error) {
	return readProcs(p.memoryDir())
}

// Kill kills every process in p with SIGKILL, also those that left the
// container's process group, and returns once none is left or it gave
// up. A cgroup that is gone is not an error.
func (p Placement) Kill() error {
	if p.IsZero() {
		return nil
	}
	return killIn(p.memoryDir())
}

// Remove removes p's directories (which must have no process left, nor
// children). A cgroup that is gone is not an error.
func (p Placement) Remove() error {
	var errs []error
	for _, d := range p.dirs() {
		errs = append(errs, rmdir(d))
	}
	return errors.Join(errs...)
}

// killIn kills the processes of the cgroup dir: through cgroup.kill
// where the kernel has it (v2), else those cgroup.procs lists, round by
// round until it is empty.
func killIn(dir string) error {
	if err := writeFile(dir, "cgroup.kill", "1"); err == nil {
		return nil
	}
	for range killRounds {
		pids, err := readProcs(dir)
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		// A killed process leaves the cgroup when it has exited (before
		// it is reaped): its pidfd says when.
		waitExited(pids, exitWait)
	}
	return fmt.Errorf("cgroup %s: processes left after %d rounds of kills", dir, killRounds)
}

func readProcs(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(s.Text())); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, s.Err()
}

// readKey reads the value of key in a flat-keyed control file ("key N"
// lines). A file without the key is an error.
func readKey(file, key string) (uint64, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", file, key)
}

// exitWait bounds how long a round of killIn waits for the processes it
// killed to exit: a process in uninterruptible sleep may take longer, and
// is killed again in the next round.
const exitWait = time.Second

// waitExited waits, at most within, until each of pids has exited: its
// pidfd (pidfd_open) becomes readable then. A PID already gone counts as
// exited; one whose pidfd cannot be opened for another reason is not
// waited for.
func waitExited(pids []int, within time.Duration) {
	fds := make([]unix.PollFd, 0, len(pids))
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
	}
	defer func(fds []unix.PollFd) {
		for _, f := range fds {
			unix.Close(int(f.Fd))
		}
	}(slices.Clone(fds)) // the loop below shortens fds in place
	deadline := time.Now().Add(within)
	for pending := fds; len(pending) > 0; {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if _, err := unix.Poll(pending, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		pending = slices.DeleteFunc(pending, func(f unix.PollFd) bool { return f.Revents != 0 })
	}
}
