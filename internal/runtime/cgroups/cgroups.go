package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Version is a cgroup hierarchy's version.
type Version int

// Versions, from one.
const (
	// V1 is one hierarchy per controller (or group of co-mounted ones).
	V1 Version = iota + 1
	// V2 is the unified hierarchy.
	V2
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	default:
		return fmt.Sprintf("Version(%d)", int(v))
	}
}

// QoS is a pod's quality-of-service level, which says where its cgroup
// goes under the root.
type QoS int

// QoS levels, from one.
const (
	Guaranteed QoS = iota + 1
	Burstable
	BestEffort
)

func (q QoS) String() string {
	switch q {
	case Guaranteed:
		return "Guaranteed"
	case Burstable:
		return "Burstable"
	case BestEffort:
		return "BestEffort"
	default:
		return fmt.Sprintf("QoS(%d)", int(q))
	}
}

// dir is the level's directory under the root: Guaranteed pods are right
// under it, as the kubelet has them.
func (q QoS) dir() string {
	switch q {
	case Burstable:
		return "burstable"
	case BestEffort:
		return "besteffort"
	default:
		return ""
	}
}

// ShimsDir is the pod's cgroup of its shims.
const ShimsDir = "shims"

// ShimPids is the room the pod's pid limit gets for each of its shims on
// cgroup v2, where a shim's threads count in the pod's pids.max (on v1 the
// shims stay out of the pod's pids cgroup).
const ShimPids = 24

// ShimMemory is the room the pod's memory limit gets for each of its
// shims, which are in the pod's cgroup but not in a container's: the
// containers of a pod may all reach their own limits.
const ShimMemory = 32 << 20

// PodPath is the cgroup of the pod uid at level q under root, as the
// kubelet names it: <root>[/<qos>]/pod<uid>.
func PodPath(root string, q QoS, uid string) string {
	return path.Join("/", root, q.dir(), "pod"+uid)
}

// PodPaths are the three places the pod's cgroup may be, for a pod whose
// QoS level is not known (its cleanup after an agent restart).
func PodPaths(root, uid string) []string {
	return []string{PodPath(root, Guaranteed, uid), PodPath(root, Burstable, uid), PodPath(root, BestEffort, uid)}
}

// Resources are a cgroup's limits. A zero field leaves the kernel's
// default: no limit, the default weight.
type Resources struct {
	// CPUShares is the v1 cpu.shares; on v2 it becomes cpu.weight by the
	// kubelet's conversion (CPUWeight).
	CPUShares uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod; zero or less: none.
	CPUQuota int64
	// CPUPeriod is the CFS period in µs; zero: DefaultCPUPeriod.
	CPUPeriod uint64
	// Memory is the hard memory limit in bytes.
	Memory int64
	// Pids is the limit of processes (threads, on v1 and v2 alike).
	Pids int64
	// OOMGroup, on v2, has the OOM killer kill the whole cgroup at once
	// (memory.oom.group), as the kubelet asks for its containers on v2.
	OOMGroup bool
}

// DefaultCPUPeriod is the CFS period the kubelet uses: 100 ms.
const DefaultCPUPeriod = 100_000

// CPUWeight is the v2 cpu.weight of v1 shares, the kubelet's conversion
// (pkg/kubelet/cm/cgroup_manager_linux.go, getCPUWeight): [2, 262144] to
// [1, 10000].
func CPUWeight(shares uint64) uint64 {
	switch {
	case shares >= 262144:
		return 10000
	case shares <= 2:
		return 1
	}
	return 1 + ((shares-2)*9999)/262142
}

// v1Controllers are the v1 controllers podward puts its cgroups in.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids"}

// shimControllers are the v1 controllers a pod's shims join.
var shimControllers = []string{"memory", "cpu", "cpuacct"}

// v2Controllers are the v2 controllers podward enables down to its
// cgroups.
var v2Controllers = []string{"cpu", "memory", "pids"}

// Hierarchy is the host's cgroup file system, as Detect found it (or a
// fake one in a directory, for tests). It is read-only after creation and
// safe for concurrent use.
type Hierarchy struct {
	version Version
	unified string            // v2 mount point
	mounts  map[string]string // v1: controller -> mount point
}

// Detect finds the host's cgroup hierarchies: v2 when /sys/fs/cgroup is
// the unified hierarchy, else the v1 hierarchies of memory, cpu, cpuacct
// and pids (a hybrid host's unified hierarchy, with no controllers, is
// not used), as runc and the kubelet decide.
func Detect() (*Hierarchy, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, fmt.Errorf("cgroups: statfs /sys/fs/cgroup: %w", err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return V2At("/sys/fs/cgroup"), nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	defer f.Close()
	mounts, err := parseMountinfo(bufio.NewScanner(f))
	if err != nil {
		return nil, fmt.Errorf("cgroups: /proc/self/mountinfo: %w", err)
	}
	for _, c := range v1Controllers {
		if mounts[c] == "" {
			return nil, fmt.Errorf("cgroups: no cgroup v1 hierarchy of the %s controller is mounted", c)
		}
	}
	return V1At(mounts), nil
}

// parseMountinfo returns the mount point of each v1 controller podward
// uses, the shortest where a controller is mounted more than once (as the
// kubelet picks it).
func parseMountinfo(s *bufio.Scanner) (map[string]string, error) {
	mounts := make(map[string]string)
	for s.Scan() {
		// 36 35 98:0 /root /mnt/point rw,... shared:1 - cgroup cgroup rw,memory
		before, after, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(before), strings.Fields(after)
		if len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		point := fields[4]
		for _, opt := range strings.Split(tail[2], ",") {
			if slices.Contains(v1Controllers, opt) {
				if prev := mounts[opt]; prev == "" || len(point) < len(prev) {
					mounts[opt] = point
				}
			}
		}
	}
	return mounts, s.Err()
}

// V2At is the unified hierarchy mounted at dir.
func V2At(dir string) *Hierarchy { return &Hierarchy{version: V2, unified: dir} }

// V1At is the v1 hierarchies of mounts (controller -> mount point), which
// must name memory, cpu, cpuacct and pids.
func V1At(mounts map[string]string) *Hierarchy {
	m := make(map[string]string, len(v1Controllers))
	for _, c := range v1Controllers {
		m[c] = mounts[c]
	}
	return &Hierarchy{version: V1, mounts: m}
}

// Version is the hierarchy's version.
func (h *Hierarchy) Version() Version { return h.version }

// String names the hierarchy for a log line.
func (h *Hierarchy) String() string {
	if h.version == V2 {
		return "cgroup v2 at " + h.unified
	}
	return "cgroup v1 (memory at " + h.mounts["memory"] + ")"
}

// Placement is where the cgroup p is, in every controller podward uses.
func (h *Hierarchy) Placement(p string) Placement {
	return h.placement(p, v1Controllers)
}

// ShimPlacement is where the shims of the pod whose cgroup is pod go: its
// ShimsDir, in memory and CPU only on v1.
func (h *Hierarchy) ShimPlacement(pod string) Placement {
	return h.placement(path.Join(pod, ShimsDir), shimControllers)
}

func (h *Hierarchy) placement(p string, controllers []string) Placement {
	if h.version == V2 {
		return Placement{Unified: filepath.Join(h.unified, p)}
	}
	pl := Placement{V1: make(map[string]V1Dir, len(controllers))}
	for _, c := range controllers {
		pl.V1[c] = V1Dir{Mount: h.mounts[c], Path: path.Clean("/" + p)}
	}
	return pl
}

// CreateShims makes the cgroup of the shims of the pod whose cgroup is pod
// (ShimPlacement), with no limits, in the hierarchies they join only.
func (h *Hierarchy) CreateShims(pod string) error {
	for _, d := range h.ShimPlacement(pod).dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	return nil
}

// dirs are the directories of the cgroup p, one per hierarchy.
func (h *Hierarchy) dirs(p string) []string {
	return h.Placement(p).dirs()
}

// Init creates root, podward's own cgroup, and on v2 enables the
// controllers podward uses down to it. It fails when cgroups cannot be
// used (not root, a read-only cgroup file system, a controller the v2
// hierarchy does not offer).
func (h *Hierarchy) Init(root string) error {
	if err := h.create(root); err != nil {
		return err
	}
	if h.version == V2 {
		return h.enable(root)
	}
	return nil
}

// Create makes the cgroup p (and its missing parents, which get no limits)
// and sets res on it. It is idempotent: an existing cgroup gets res.
func (h *Hierarchy) Create(p string, res Resources) error {
	if err := h.create(path.Dir(p)); err != nil {
		return err
	}
	if h.version == V2 {
		if err := h.enable(path.Dir(p)); err != nil {
			return err
		}
	}
	if err := h.create(p); err != nil {
		return err
	}
	return h.Update(p, res)
}

// create makes the directories of p in every hierarchy.
func (h *Hierarchy) create(p string) error {
	for _, d := range h.dirs(p) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", p, err)
		}
	}
	return nil
}

// enable turns podward's v2 controllers on for the children of p and of
// each of its ancestors, from the mount point down, as far as the parent
// offers them.
func (h *Hierarchy) enable(p string) error {
	dir := h.unified
	if err := enableIn(dir); err != nil {
		return err
	}
	for _, part := range strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/") {
		if part == "" {
			break
		}
		dir = filepath.Join(dir, part)
		if err := enableIn(dir); err != nil {
			return err
		}
	}
	return nil
}

// enableIn writes the controllers dir offers (and its children do not
// have yet) to its cgroup.subtree_control.
func enableIn(dir string) error {
	offered, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	enabled, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var add []string
	for _, c := range v2Controllers {
		if !slices.Contains(strings.Fields(string(offered)), c) {
			return fmt.Errorf("cgroup %s: the %s controller is not available", dir, c)
		}
		if !slices.Contains(strings.Fields(string(enabled)), c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeFile(dir, "cgroup.subtree_control", strings.Join(add, " "))
}

// Update sets res on the existing cgroup p: a zero field resets its limit
// (no limit, the default weight). It is how a running container's limits
// change.
func (h *Hierarchy) Update(p string, res Resources) error {
	period := res.CPUPeriod
	if period == 0 {
		period = DefaultCPUPeriod
	}
	var err error
	if h.version == V2 {
		err = h.updateV2(filepath.Join(h.unified, p), res, period)
	} else {
		err = h.updateV1(p, res, period)
	}
	if err != nil {
		return fmt.Errorf("set the limits of cgroup %s: %w", p, err)
	}
	return nil
}

func (h *Hierarchy) updateV1(p string, res Resources, period uint64) error {
	mem := filepath.Join(h.mounts["memory"], p)
	cpu := filepath.Join(h.mounts["cpu"], p)
	pids := filepath.Join(h.mounts["pids"], p)
	shares := res.CPUShares
	if shares == 0 {
		shares = 1024
	}
	quota := "-1"
	if res.CPUQuota > 0 {
		quota = strconv.FormatInt(res.CPUQuota, 10)
	}
	return errors.Join(
		writeFile(mem, "memory.limit_in_bytes", limit(res.Memory, "-1")),
		writeFile(cpu, "cpu.shares", strconv.FormatUint(shares, 10)),
		writeFile(cpu, "cpu.cfs_period_us", strconv.FormatUint(period, 10)),
		writeFile(cpu, "cpu.cfs_quota_us", quota),
		writeFile(pids, "pids.max", limit(res.Pids, "max")),
	)
}

func (h *Hierarchy) updateV2(dir string, res Resources, period uint64) error {
	weight := uint64(100)
	if res.CPUShares > 0 {
		weight = CPUWeight(res.CPUShares)
	}
	quota := "max"
	if res.CPUQuota > 0 {
		quota = strconv.FormatInt(res.CPUQuota, 10)
	}
	errs := []error{
		writeFile(dir, "memory.max", limit(res.Memory, "max")),
		writeFile(dir, "cpu.weight", strconv.FormatUint(weight, 10)),
		writeFile(dir, "cpu.max", quota+" "+strconv.FormatUint(period, 10)),
		writeFile(dir, "pids.max", limit(res.Pids, "max")),
	}
	if res.OOMGroup {
		errs = append(errs, writeFile(dir, "memory.oom.group", "1"))
	}
	return errors.Join(errs...)
}

// limit is n as a cgroup limit, none when n is not positive.
func limit(n int64, none string) string {
	if n <= 0 {
		return none
	}
	return strconv.FormatInt(n, 10)
}

// Exists says whether the cgroup p exists: on v1, in the first of its
// hierarchies' directories in sorted order (Create makes p in all of them
// together, and Remove removes it from all).
func (h *Hierarchy) Exists(p string) bool {
	_, err := os.Stat(h.dirs(p)[0])
	return err == nil
}

// Remove removes the cgroup p and every cgroup below it, deepest first,
// in every hierarchy, killing the processes left in them first. A cgroup
// that does not exist is not an error. It is how a pod's cgroups go once
// nothing of it runs.
func (h *Hierarchy) Remove(p string) error {
	var errs []error
	for _, d := range h.dirs(p) {
		if err := RemoveTree(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveTree kills what is left in the cgroup directory dir and the ones
// below it and removes them, children first; a directory that does not
// exist is not an error. A cgroup's files cannot be
// removed, only the directory, and only once no process is left in it.
func RemoveTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			if err := RemoveTree(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := killIn(dir); err != nil {
		errs = append(errs, err)
	}
	if err := rmdir(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// rmdir removes the cgroup directory dir, its control files with it (a
// fake cgroup in a test directory has them as plain files). A cgroup that
// is gone is not an error.
func rmdir(dir string) error {
	err := unix.Rmdir(dir)
	if errors.Is(err, unix.ENOTEMPTY) {
		// Not a cgroup file system: the control files are files.
		if entries, rerr := os.ReadDir(dir); rerr == nil {
			for _, e := range entries {
				if !e.IsDir() {
					_ = os.Remove(filepath.Join(dir, e.Name()))
				}
			}
		}
		err = unix.Rmdir(dir)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove cgroup", Path: dir, Err: err}
	}
	return nil
}

// writeFile writes value to the control file name of the cgroup dir.
func writeFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return nil
}
