package bintest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"go.uber.org/goleak"
)

// Program is a helper binary that a suite's containers run, built by Main
// next to podward.
type Program struct {
	// Pkg is the program's import path.
	Pkg string
	// Bin is set to the built binary's path.
	Bin *string
}

// ShimBin is the process runtime's shim binary (cmd/podward-shim) that
// Main built beside podward, where the agent finds it: a test can check
// that the shims are this binary, not podward re-executed.
var ShimBin string

// LeakOptions are the goroutines a suite expects to outlive its tests,
// for the leak check of Main: e.g. the idle API connections of client-go,
// which a suite that talks to an API server keeps until it exits.
var LeakOptions []goleak.Option

// Main is the body of a suite's TestMain: it builds cmd/podward, and
// cmd/podward-shim beside it (ShimBin), and the extra programs into a
// temporary directory, sets *bin (and each Program.Bin) to the binary's
// path, runs the tests and removes the
// binaries; once the tests passed, it checks that no harness goroutine
// outlived its test. It returns the exit code for os.Exit. suite names the
// suite in what Main prints and in the directory's name.
//
// Each suite builds its own binary, rather than using bin/podward, so that
// it never tests a stale build.
func Main(m *testing.M, suite string, bin *string, extra ...Program) int {
	dir, err := os.MkdirTemp("", "podward-"+suite+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, suite+":", err)
		return 1
	}
	defer os.RemoveAll(dir)
	progs := append([]Program{
		{Pkg: "github.com/podward/podward/cmd/podward", Bin: bin},
		{Pkg: "github.com/podward/podward/cmd/podward-shim", Bin: &ShimBin},
	}, extra...)
	for _, p := range progs {
		*p.Bin = filepath.Join(dir, path.Base(p.Pkg))
		build := exec.Command("go", "build", "-o", *p.Bin, p.Pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: build %s: %v\n", suite, p.Pkg, err)
			return 1
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(LeakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, suite+": leaked goroutines:", err)
			return 1
		}
	}
	return code
}

// maxLine is the longest line ScanLines hands on.
const maxLine = 1024 * 1024

// ScanLines calls each with every line r yields, without its line end, and
// returns once r is at its end; the caller closes r. A line longer than
// maxLine ends the scan: whatever r still yields is then copied to rest, so
// that the process writing into r never blocks on a full pipe (or fails
// writing into a closed one).
func ScanLines(r io.Reader, rest io.Writer, each func(line string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for sc.Scan() {
		each(sc.Text())
	}
	_, _ = io.Copy(rest, r)
}

// ProcStat is the state letter and the parent PID of pid, from /proc; ok is
// false once the process is gone.
func ProcStat(pid int) (state byte, ppid int, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The state and the parent follow the command name in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

// Cmdline is the command line of pid, its arguments joined by spaces; ""
// once the process is gone.
func Cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// ProcessRuns reports whether pid is a live process (neither a zombie nor
// dead) whose command line contains s. Checking the command line, with s a
// test's marker or a container's command, keeps a PID that the kernel gave
// to another process from counting.
func ProcessRuns(pid int, s string) bool {
	state, _, ok := ProcStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return false
	}
	return strings.Contains(Cmdline(pid), s)
}

// CLI runs `bin ARGS...` as a client of the agent on socket, for at most
// within, and returns its stdout; on failure the error has the exit status
// and stderr.
func CLI(bin, socket string, within time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+socket)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podward %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ProcessesRunning lists the live processes whose command line contains s,
// in any PID namespace: a container's processes are visible from the host
// whatever runtime started them, so a unique marker in a container's
// command finds them on both runtimes.
func ProcessesRunning(s string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if ProcessRuns(pid, s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitExit waits at most within for pid to exit, through a pidfd, and
// reports whether it did (or was already gone).
func WaitExit(pid int, within time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // gone already
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(max(within, 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// Memory is the resident memory of pid now and the most it had, in bytes:
// VmRSS and VmHWM of /proc/PID/status.
func Memory(pid int) (rss, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	fields := map[string]*int64{"VmRSS:": &rss, "VmHWM:": &peak}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || fields[f[0]] == nil || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, f[0], err)
		}
		*fields[f[0]] = kb << 10
		delete(fields, f[0])
	}
	if len(fields) > 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS or no VmHWM", pid)
	}
	return rss, peak, nil
}

// ResetPeakMemory makes pid's peak resident memory (Memory's peak) its
// current one, so that the peak then says what the process reached since:
// it writes 5 to /proc/PID/clear_refs (Linux 4.0 and later).
func ResetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
