package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// initEnv carries the init helper's instructions, as JSON, from the runtime
// to MaybeRunInit. The helper removes it before it execs the command.
const initEnv = "_PODWARD_PROCESS_INIT"

// initStatusFD is where the helper finds the pipe on which it reports a
// failure before exec; a successful exec closes it without a word.
const initStatusFD = 3

// initSpec is what the init helper does: mount, change directory, exec.
type initSpec struct {
	Mounts []bindMount `json:"mounts"`
	Dir    string      `json:"dir"`
	Argv   []string    `json:"argv"`
}

// MaybeRunInit turns the process into the process runtime's init helper
// when the runtime started it as one, and returns at once otherwise. main
// and TestMain must call it first, before any other work: the helper does a
// container's bind mounts in its private mount namespace and then execs the
// container's command, or reports why it could not and exits with 127.
func MaybeRunInit() {
	raw, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	err := runInit(raw)
	if err == nil {
		err = errors.New("init helper: exec returned")
	}
	status := os.NewFile(initStatusFD, "init-status")
	if _, werr := fmt.Fprint(status, err.Error()); werr != nil {
		fmt.Fprintln(os.Stderr, err.Error())
	}
	os.Exit(127)
}

// runInit returns only when it could not exec the command.
func runInit(raw string) error {
	if err := os.Unsetenv(initEnv); err != nil {
		return err
	}
	// The container must not inherit the status pipe; exec closing it tells
	// the runtime that the command runs.
	unix.CloseOnExec(initStatusFD)
	var spec initSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("init helper: %w", err)
	}
	if len(spec.Argv) == 0 {
		return errors.New("init helper: no command")
	}
	for _, m := range spec.Mounts {
		if err := bind(m); err != nil {
			return err
		}
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return err
	}
	env := os.Environ()
	path, err := lookPath(spec.Argv[0], lookupEnv(env, "PATH"), spec.Dir)
	if err != nil {
		return err
	}
	if err := unix.Exec(path, spec.Argv, env); err != nil {
		return &fs.PathError{Op: "exec", Path: path, Err: err}
	}
	return nil
}

// bind mounts m.Source on m.Target, read-only when asked. The namespace's
// mounts are private (Go made / private when it unshared it), so nothing of
// this shows on the host.
func bind(m bindMount) error {
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", m.Source, m.Target, err)
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

// lookPath finds the executable of a command the way a container runtime
// does: a name with a slash is a path (relative to dir), any other name is
// looked up in the container's PATH, not the agent's.
func lookPath(file, pathEnv, dir string) (string, error) {
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
