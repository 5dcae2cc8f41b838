package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/podward/podward/internal/runtime/cgroups"
	"golang.org/x/sys/unix"
)

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// Mount is one volume mount of a container, as the init helper does it.
type Mount struct {
	// Source is what is mounted: a host path, whose symlinks are followed;
	// with SubPath, the volume's directory.
	Source string `json:"source"`
	// SubPath, when set, is the path inside Source that is mounted, with no
	// symlink in it (hostfs.SubPath): the helper opens it refusing any
	// symlink below Source and mounts what it opened, so that a container
	// that swapped a component for a symlink since the runtime checked it
	// makes the start fail instead of mounting what the symlink points to.
	SubPath  string `json:"subPath,omitempty"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Spec is a process to start in a container's context.
type Spec struct {
	Argv []string `json:"argv"`
	// Env is the whole environment, as NAME=value; PATH in it is where
	// Argv[0] is looked up.
	Env []string `json:"env"`
	Dir string   `json:"dir"`
	// Mounts, when any, are bind-mounted in a private mount namespace,
	// parents before children.
	Mounts []Mount `json:"mounts,omitempty"`
	// Hostname, when set, is the host name of a UTS namespace of the
	// process's own (which needs CanUnshareUTS).
	Hostname string `json:"hostname,omitempty"`
	// Cgroup, when set, is the cgroup the process runs its command in: it
	// is forked into it (Start) or moved there before the init helper
	// execs the command (StartTied), never after the command began.
	Cgroup *cgroups.Placement `json:"cgroup,omitempty"`
	// Security, when set, is what the process is restricted to (who it
	// runs as, its capabilities, seccomp, its PID namespace and view of
	// the filesystem); such a process always goes through the init
	// helper, which applies it. Nil: the agent's user and rights.
	Security *Security `json:"security,omitempty"`
	// OOMScoreAdj, when set, is given to the process before its command
	// runs (through the init helper).
	OOMScoreAdj *int `json:"-"`
	// Helper is the binary run as the init helper when the process goes
	// through it (StartTied's with mounts, a host name or a started
	// callback): one whose main calls MaybeRunHelper first, the small
	// podward-shim or podward itself. "" is this very binary
	// (/proc/self/exe). It is how the process is started, not part of the
	// container's spec, and is not recorded.
	Helper string `json:"-"`
	// Stdin, when set, is the process's standard input (else /dev/null):
	// a pipe or, with Terminal, a pty's slave end. Like Helper it is how
	// the process is started, not recorded.
	Stdin *os.File `json:"-"`
	// Terminal makes Stdin the process's controlling terminal, in a
	// session of its own (whose ID is its PID, so its process group's
	// still), so that a shell on it does job control and gets SIGWINCH.
	Terminal bool `json:"-"`
	// Join, when set, are the namespaces of a running container that the
	// process joins instead of making its own: Mounts and Hostname are
	// then not used (the container's namespace has its mounts and name,
	// and those it made itself), and Dir and Argv[0] are resolved in the
	// container's view. The init helper joins them (a process with Join
	// always goes through it). Like Stdin, the caller owns the files.
	Join *Namespaces `json:"-"`
}

// Start starts spec in a process group of its own with the given stdout and
// stderr, and returns once the process runs its command (or failed to). A
// process with mounts, a host name or a cgroup is forked from a thread in
// namespaces (and, on cgroup v1, cgroups) of its own (startIsolated), not
// through the init helper. A working
// directory that is not one is reported as such (`workingDir "/x": no such
// file or directory`), not as a command that could not be run. ctx that
// ended means nothing is started. The caller owns the returned Cmd and
// must Wait for it.
func Start(ctx context.Context, spec Spec, stdout, stderr *os.File) (*exec.Cmd, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(spec.Argv) > 0 && spec.Join == nil && spec.Security == nil && (len(spec.Mounts) > 0 || spec.Hostname != "" || spec.Cgroup != nil) {
		return startIsolated(spec, stdout, stderr)
	}
	fork := (*exec.Cmd).Start
	if pidns := spec.Join.pidNamespace(); pidns != nil {
		fork = func(cmd *exec.Cmd) error { return forkInto(pidns, cmd) }
	}
	return start(ctx, spec, stdout, stderr, starter{fork: fork})
}

// starter is how start starts a process.
type starter struct {
	// fork starts the prepared command.
	fork func(*exec.Cmd) error
	// started, when set, is called with the process's PID before the
	// process runs its command, which so always goes through the helper.
	started func(pid int)
	// pdeathsig: the helper gives itself the parent-death signal, which
	// fork could not (a process forked into another PID namespace sees
	// no parent, which Go's check after setting it takes for a dead one).
	pdeathsig bool
}

// start is Start, the way how says; when it fails, what it started was
// reaped.
func start(ctx context.Context, spec Spec, stdout, stderr *os.File, how starter) (*exec.Cmd, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command")
	}
	if spec.Cgroup != nil && how.started == nil {
		// The helper waits for its move into the cgroup.
		how.started = func(int) {}
	}
	if len(spec.Mounts) > 0 || spec.Hostname != "" || spec.Join != nil || spec.Security != nil || how.started != nil {
		return startHelper(ctx, spec, stdout, stderr, how)
	}
	cmd, err := command(spec, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if err := how.fork(cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// command is spec's command as the container's own process runs it, in
// its own process group, once its directory exists and its executable is
// found in its PATH (which the mounts, already made, may provide).
func command(spec Spec, stdout, stderr *os.File) (*exec.Cmd, error) {
	if err := checkDir(spec.Dir); err != nil {
		return nil, err
	}
	path, err := LookPath(spec.Argv[0], LookupEnv(spec.Env, "PATH"), spec.Dir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.Argv,
		Env:         spec.Env,
		Dir:         spec.Dir,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	withStdin(spec, cmd)
	return cmd, nil
}

// withStdin gives cmd spec's Stdin and, with Terminal, makes it the
// controlling terminal of a session of its own.
func withStdin(spec Spec, cmd *exec.Cmd) {
	if spec.Stdin == nil {
		return
	}
	cmd.Stdin = spec.Stdin
	if spec.Terminal {
		// A session leader is its group's leader already, and may not
		// set its group.
		cmd.SysProcAttr.Setpgid = false
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0 // the child's stdin
	}
}

// startHelper starts spec through the init helper. With how.started, the
// helper waits for a byte on its go-ahead pipe before it execs the
// command, which start writes once started returned.
func startHelper(ctx context.Context, spec Spec, stdout, stderr *os.File, how starter) (*exec.Cmd, error) {
	hs := newHelperSpec(spec, how.started != nil)
	hs.Pdeathsig = how.pdeathsig
	joined := hs.join(spec.Join)
	raw, err := json.Marshal(hs)
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusR.Close()
	extra := []*os.File{statusW} // helperStatusFD
	var goR, goW *os.File
	if hs.WaitGo {
		if goR, goW, err = os.Pipe(); err != nil {
			statusW.Close()
			return nil, err
		}
		defer goW.Close()
		extra = append(extra, goR) // helperGoFD
	}
	pipes := len(extra)
	extra = append(extra, joined...)
	helper := spec.Helper
	if helper == "" {
		// This very binary, even if it was replaced on disk since.
		helper = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path:       helper,
		Args:       []string{"podward-init"},
		Env:        append(spec.Env[:len(spec.Env):len(spec.Env)], HelperEnv+"="+string(raw)),
		Dir:        "/", // the helper changes to spec.Dir after mounting
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:      true,
			Cloneflags:   cloneFlags(spec),
			Unshareflags: unshareFlags(spec),
		},
	}
	withStdin(spec, cmd)
	err = how.fork(cmd)
	// The pipes' ends are the helper's now.
	for _, f := range extra[:pipes] {
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("start init helper: %w", err)
	}
	if err := enterCgroup(spec, cmd); err != nil {
		return nil, err
	}
	if hs.WaitGo {
		how.started(cmd.Process.Pid)
		// A helper that failed already has closed its end: EPIPE, and its
		// failure is on the status pipe.
		_, _ = goW.Write([]byte{1})
	}
	stop := context.AfterFunc(ctx, func() { _ = statusR.SetReadDeadline(longAgo) })
	msg, err := io.ReadAll(statusR)
	stop()
	if err == nil && len(msg) == 0 {
		return cmd, nil
	}
	// The helper failed, or we gave up on it: it must not go on.
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	_ = cmd.Wait()
	switch {
	case len(msg) > 0:
		return nil, errors.New(string(msg))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		return nil, fmt.Errorf("wait for the init helper: %w", err)
	}
}

// newHelperSpec is what the init helper of spec does; waitGo: it waits for
// the go-ahead.
func newHelperSpec(spec Spec, waitGo bool) helperSpec {
	return helperSpec{
		Mounts: spec.Mounts, Dir: spec.Dir, Argv: spec.Argv, Hostname: spec.Hostname,
		Security: spec.Security, OOMScoreAdj: spec.OOMScoreAdj, WaitGo: waitGo,
	}
}

// join makes the helper join ns (when not nil) instead of making its
// namespaces, and returns the files to pass it, after its pipes (so the
// go-ahead's, set already, must be): they stay their owner's.
func (hs *helperSpec) join(ns *Namespaces) []*os.File {
	if ns == nil {
		return nil
	}
	hs.Mounts, hs.Hostname, hs.Joined = nil, "", true
	next := helperGoFD
	if hs.WaitGo {
		next++
	}
	var files []*os.File
	for _, n := range []struct {
		f  *os.File
		fd *int
	}{{ns.Mnt, &hs.JoinMnt}, {ns.UTS, &hs.JoinUTS}} {
		if n.f != nil {
			*n.fd = next
			next++
			files = append(files, n.f)
		}
	}
	return files
}

// enterCgroup moves the init helper cmd, which waits for its go-ahead,
// into spec's cgroup; when it cannot, the helper is killed and reaped.
func enterCgroup(spec Spec, cmd *exec.Cmd) error {
	if spec.Cgroup == nil {
		return nil
	}
	if err := spec.Cgroup.Enter(cmd.Process.Pid); err != nil {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	return nil
}

// cloneFlags are the namespaces the init helper of spec is born in: a
// PID namespace of the container's own, whose init it is, with a mount
// namespace for its /proc.
func cloneFlags(spec Spec) uintptr {
	if spec.Join == nil && spec.Security != nil && spec.Security.PIDNamespace {
		return syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	return 0
}

// unshareFlags are the namespaces the init helper of spec makes once
// forked (Go makes a mount namespace private): a mount namespace for its
// mounts and its view, a UTS namespace for its host name; none when it
// joins a container's.
func unshareFlags(spec Spec) uintptr {
	var flags uintptr
	if spec.Join != nil {
		return 0
	}
	if cloneFlags(spec)&syscall.CLONE_NEWNS == 0 && (len(spec.Mounts) > 0 || spec.Security.needsMountNamespace()) {
		flags |= syscall.CLONE_NEWNS
	}
	if spec.Hostname != "" {
		flags |= syscall.CLONE_NEWUTS
	}
	return flags
}

// CanUnshareUTS says whether this process may start processes in UTS
// namespaces of their own (root with CAP_SYS_ADMIN, where no sandbox
// forbids it). It tries on an OS thread of its own, which exits
// afterwards with the namespace it made.
func CanUnshareUTS() bool {
	ok := make(chan bool, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, so no other
		// goroutine runs in its namespace.
		goruntime.LockOSThread()
		ok <- unix.Unshare(unix.CLONE_NEWUTS) == nil
	}()
	return <-ok
}

// checkDir checks a working directory before a start, so that a missing
// one is reported as itself: exec would fail with the same error as for a
// missing command.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirError(dir, err)
	}
	if !fi.IsDir() {
		return dirError(dir, syscall.ENOTDIR)
	}
	return nil
}

// dirError is a failure to use dir as the working directory, named after
// the container's field: `workingDir "/x": no such file or directory`.
func dirError(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("workingDir %q: %w", dir, err)
}

// LookPath finds the executable of a command the way a container runtime
// does: a name with a slash is a path (relative to dir), any other name is
// looked up in the container's PATH, not the agent's.
func LookPath(file, pathEnv, dir string) (string, error) {
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", file, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, file)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: executable file not found in $PATH", file)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// LookupEnv returns the value of name in env, a list of NAME=value.
func LookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// WaitExited blocks until the child process pid exited, without reaping
// it: until the caller reaps it, its PID, and so its process group ID,
// cannot be reused.
func WaitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return os.NewSyscallError("waitid", err)
			}
			return nil
		}
	}
}

// ExitCode is a reaped process's exit code as container runtimes report
// it: 128+signal for a signal.
func ExitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Clock is what DrainPipes needs of a clock. k8s.io/utils/clock's Clocks
// (the agent's, a fake one in its tests) are Clocks; the package declares
// its own so that the shim binary, which links it, links no Kubernetes
// package.
type Clock interface {
	After(d time.Duration) <-chan time.Time
}

// DrainPipes waits for the goroutines copying pipes to finish, one value on
// copied each, cutting the pipes once timeout passed on clk (a grandchild
// that left the process group may hold them open for ever), and then closes
// the pipes.
func DrainPipes(clk Clock, timeout time.Duration, log *slog.Logger, pipes []*os.File, copied <-chan struct{}) {
	cut := clk.After(timeout)
	for remaining := len(pipes); remaining > 0; {
		select {
		case <-copied:
			remaining--
		case <-cut:
			log.Warn("output pipes still open after the process group was killed; closing them", "timeout", timeout)
			for _, p := range pipes {
				_ = p.SetReadDeadline(longAgo)
			}
		}
	}
	for _, p := range pipes {
		p.Close()
	}
}
