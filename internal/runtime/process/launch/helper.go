package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/hostfs/beneath"
)

// HelperEnv carries the init helper's instructions, as JSON, from Start to
// MaybeRunHelper. The helper removes it before it execs the command.
const HelperEnv = "_PODWARD_PROCESS_INIT"

// helperStatusFD is where the helper finds the pipe on which it reports a
// failure before exec; a successful exec closes it without a word.
const helperStatusFD = 3

// helperGoFD is where a helper with WaitGo finds the pipe on which it
// waits for one byte, the go-ahead, before it execs the command.
const helperGoFD = 4

// helperSpec is what the init helper does: set the host name, mount,
// change directory, restrict itself, exec (or fork, as a parent).
type helperSpec struct {
	Mounts   []Mount  `json:"mounts"`
	Dir      string   `json:"dir"`
	Argv     []string `json:"argv"`
	Hostname string   `json:"hostname,omitempty"`
	// Security, when set, is what the command is restricted to; with a
	// PID namespace of its own the helper is its init (initproc.go).
	Security *Security `json:"security,omitempty"`
	// OOMScoreAdj, when set, is written to the helper's oom_score_adj
	// before it starts the command, which inherits it.
	OOMScoreAdj *int `json:"oomScoreAdj,omitempty"`
	// WaitGo: wait for the go-ahead (helperGoFD) before the exec.
	WaitGo bool `json:"waitGo,omitempty"`
	// Joined: the helper joins a running container's namespaces
	// (Spec.Join). JoinMnt and JoinUTS, when not 0, are the descriptors
	// of its mount and UTS namespaces, which the helper joins instead of
	// doing Mounts, Hostname and Security's view: they follow the pipes.
	// Its PID namespace the helper was forked into (forkInto).
	Joined  bool `json:"joined,omitempty"`
	JoinMnt int  `json:"joinMnt,omitempty"`
	JoinUTS int  `json:"joinUTS,omitempty"`
	// Pdeathsig: the helper gives itself the parent-death signal SIGKILL,
	// which its starter could not (forkInto), before it waits for the
	// go-ahead, and again after it changed its user, which clears it.
	Pdeathsig bool `json:"pdeathsig,omitempty"`
}

// The init helper execs the command from its main thread: StartTied set
// the parent-death signal on that thread only (the helper's other threads
// do not inherit it), and an exec from another thread would give the
// command that thread's, none. An init function that locks the main
// goroutine to its thread keeps main on it.
func init() {
	if _, ok := os.LookupEnv(HelperEnv); ok {
		goruntime.LockOSThread()
	}
}

// MaybeRunHelper turns the process into the init helper when Start started
// it as one, and returns at once otherwise. The binary's main must call it
// first, before any other work: the helper joins the running container's
// mount and UTS namespaces (Spec.Join), or sets the container's host name
// in its private UTS namespace and does its bind mounts in its private
// mount namespace, and then execs the container's command, or reports why
// it could not and exits with 127.
func MaybeRunHelper() {
	raw, ok := os.LookupEnv(HelperEnv)
	if !ok {
		return
	}
	err := runHelper(raw)
	if err == nil {
		err = errors.New("init helper: exec returned")
	}
	status := os.NewFile(helperStatusFD, "init-status")
	if _, werr := fmt.Fprint(status, err.Error()); werr != nil {
		fmt.Fprintln(os.Stderr, err.Error())
	}
	os.Exit(127)
}

// runHelper returns only when it could not exec the command.
func runHelper(raw string) error {
	if err := os.Unsetenv(HelperEnv); err != nil {
		return err
	}
	// The container must not inherit the status pipe; exec closing it tells
	// Start that the command runs.
	unix.CloseOnExec(helperStatusFD)
	var spec helperSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("init helper: %w", err)
	}
	if spec.WaitGo {
		unix.CloseOnExec(helperGoFD)
	}
	if len(spec.Argv) == 0 {
		return errors.New("init helper: no command")
	}
	if spec.Pdeathsig {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("init helper: parent-death signal: %w", err)
		}
	}
	// Before the container's view, whose /proc may be of a PID namespace
	// the helper is not in. Best effort: lowering it needs
	// CAP_SYS_RESOURCE, which a host may not give; the shim sets it too,
	// and warns when it cannot.
	if spec.OOMScoreAdj != nil {
		_ = os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(*spec.OOMScoreAdj)), 0)
	}
	// The container's namespaces (which have its mounts and name), or
	// namespaces of its own with them.
	if spec.Joined {
		if err := join(spec.JoinMnt, spec.JoinUTS); err != nil {
			return err
		}
	} else if err := isolate(spec.Hostname, spec.Mounts, spec.Security); err != nil {
		return err
	}
	// After the mounts: a volume may provide the directory, and in the
	// container's namespace it is its view of the path.
	if err := os.Chdir(spec.Dir); err != nil {
		return dirError(spec.Dir, err)
	}
	env := os.Environ()
	path, err := LookPath(spec.Argv[0], LookupEnv(env, "PATH"), spec.Dir)
	if err != nil {
		return err
	}
	if spec.WaitGo {
		if err := waitGo(); err != nil {
			return err
		}
	}
	return execCommand(&spec, path, env)
}

// execCommand runs the command, restricted as spec says: the helper execs
// it, or forks it and stays its parent when it is the init of the
// container's PID namespace or joined one (runAsParent).
func execCommand(spec *helperSpec, path string, env []string) error {
	if err := restrict(spec.Security); err != nil {
		return fmt.Errorf("init helper: %w", err)
	}
	var user *User
	if spec.Security != nil {
		user = spec.Security.User
	}
	if spec.Security != nil && spec.Security.PIDNamespace && !spec.Joined {
		return runAsParent(path, spec.Argv, env, user)
	}
	if err := setUserKeepingPdeathsig(user); err != nil {
		return fmt.Errorf("init helper: %w", err)
	}
	if err := unix.Exec(path, spec.Argv, env); err != nil {
		return &fs.PathError{Op: "exec", Path: path, Err: err}
	}
	return nil
}

// isolate sets the host name of the calling thread's (fresh) UTS namespace
// and builds the container's view in its (fresh, private) mount namespace:
// with sec, a /proc of its PID namespace and a /dev of its own; the bind
// mounts of its volumes; then sec's masked, read-only and hidden paths and
// its read-only root (view.go). Every source is opened before the first
// mount, which could otherwise hide a later source's path; each mount is
// of what was opened.
func isolate(hostname string, mounts []Mount, sec *Security) error {
	if hostname != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("init helper: set the host name %q: %w", hostname, err)
		}
	}
	sources := make([]*os.File, len(mounts))
	defer func() {
		for _, f := range sources {
			if f != nil {
				f.Close()
			}
		}
	}()
	for i, m := range mounts {
		f, err := openSource(m)
		if err != nil {
			return fmt.Errorf("volume mount %s: %w", m.Target, err)
		}
		sources[i] = f // close-on-exec
	}
	if err := baseView(sec, mounts, sources); err != nil {
		return err
	}
	for i, m := range mounts {
		if err := bind(m, sources[i]); err != nil {
			return err
		}
	}
	return restrictView(sec, mounts)
}

// openSource opens what m mounts as an O_PATH file: m.Source following
// its symlinks, or with a SubPath, that path below m.Source refusing any
// symlink (beneath.OpenSubPath, as hostfs.SubPath.Open).
func openSource(m Mount) (*os.File, error) {
	if m.SubPath != "" {
		return beneath.OpenSubPath(m.Source, m.SubPath)
	}
	fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: m.Source, Err: err}
	}
	return os.NewFile(uintptr(fd), m.Source), nil
}

// bind mounts src, which openSource opened for m, on m.Target, read-only
// when asked. The namespace's mounts are private (Go made / private when it
// unshared it), so nothing of this shows on the host.
func bind(m Mount, src *os.File) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(src.Fd()))
	if err := unix.Mount(proc, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", src.Name(), m.Target, err)
	}
	if !m.ReadOnly {
		return nil
	}
	// A bind mount's flags can only be changed by a remount, which must keep
	// the flags the source's mount locks.
	var st unix.Statfs_t
	if err := unix.Statfs(m.Target, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", m.Target, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []uintptr{unix.MS_NOSUID, unix.MS_NODEV, unix.MS_NOEXEC} {
		if uintptr(st.Flags)&f != 0 {
			flags |= f
		}
	}
	if err := unix.Mount("", m.Target, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", m.Target, err)
	}
	return nil
}

// waitGo waits for the go-ahead to exec: a byte on helperGoFD. The pipe's
// end without one means that the process that started the helper gave up
// on it (or died).
func waitGo() error {
	f := os.NewFile(helperGoFD, "init-go")
	defer f.Close()
	var b [1]byte
	if n, _ := f.Read(b[:]); n != 1 {
		return errors.New("init helper: no go-ahead to run the command")
	}
	return nil
}
