package sockdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// RootDir is the socket directory of an agent run by root.
const RootDir = "/run/podward"

// TempUserDir is the calling user's socket directory when there is no
// $XDG_RUNTIME_DIR: $TMPDIR/podward-<euid> (/tmp/podward-<euid>).
func TempUserDir() string {
	return filepath.Join(os.TempDir(), "podward-"+strconv.Itoa(os.Geteuid()))
}

// RuntimeUserDir is the calling user's socket directory under
// $XDG_RUNTIME_DIR, or "" when that is not set.
func RuntimeUserDir() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "podward")
}

// Rule is what a socket directory must be.
type Rule int

const (
	// Unchecked is a directory the user named: used as it is.
	Unchecked Rule = iota + 1
	// Private is a per-user directory: owned by the calling user, mode
	// 0700, not a symbolic link.
	Private
	// RootOwned is root's directory: owned by root, writable by nobody
	// else, not a symbolic link.
	RootOwned
)

func (r Rule) String() string {
	switch r {
	case Unchecked:
		return "Unchecked"
	case Private:
		return "Private"
	case RootOwned:
		return "RootOwned"
	default:
		return "Rule(" + strconv.Itoa(int(r)) + ")"
	}
}

// RuleFor is the rule of the socket directory dir: Private for the calling
// user's per-user directories (TempUserDir, RuntimeUserDir), RootOwned for
// RootDir, Unchecked for any other. It reads the environment, not the
// filesystem.
func RuleFor(dir string) Rule {
	dir = filepath.Clean(dir)
	switch {
	case dir == RootDir:
		return RootOwned
	case dir == TempUserDir():
		return Private
	case RuntimeUserDir() != "" && dir == RuntimeUserDir():
		return Private
	default:
		return Unchecked
	}
}

// ErrUnsafe is matched by the error of Check and Prepare for a directory
// that breaks its rule.
var ErrUnsafe = errors.New("unsafe socket directory")

// UnsafeError is a socket directory that breaks its rule.
type UnsafeError struct {
	Dir     string
	Rule    Rule
	Problem string // what is wrong: "is owned by uid 65534 (nobody), not by you (uid 1000 (ann))"
	Fix     string // what to do about it
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("socket directory %s %s; %s", e.Dir, e.Problem, e.Fix)
}

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// Check checks dir against its rule: RuleFor(dir).Check(dir).
func Check(dir string) error { return RuleFor(dir).Check(dir) }

// Prepare readies dir for the agent's socket: RuleFor(dir).Prepare(dir).
func Prepare(dir string) error { return RuleFor(dir).Prepare(dir) }

// Check returns nil when dir meets r, when r is Unchecked, or when dir
// does not exist (then there is no socket to reach, nor one planted).
// Otherwise the error is an *UnsafeError, or the error of reading dir's
// attributes. It only reads them (lstat); it is safe for concurrent use.
func (r Rule) Check(dir string) error {
	if r == Unchecked {
		return nil
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return r.check(dir, fi)
}

// Prepare readies dir for the agent's socket: it creates it when it does
// not exist — mode 0700 for a Private directory (whose parent must exist),
// else 0755 with its parents — and then checks it as Check does. A
// directory that exists is never changed: one that breaks r is an
// *UnsafeError, for the user to remove.
func (r Rule) Prepare(dir string) error {
	switch r {
	case Private:
		// Mkdir, not MkdirAll: dir's last component must be made here,
		// as a directory, or be checked as it is.
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create socket directory: %w", err)
		}
	default:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create socket directory: %w", err)
		}
	}
	if r == Unchecked {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return r.check(dir, fi)
}

// check applies r to dir, whose lstat is fi.
func (r Rule) check(dir string, fi fs.FileInfo) error {
	unsafe := func(problem, fix string) error {
		return &UnsafeError{Dir: dir, Rule: r, Problem: problem, Fix: fix}
	}
	remove := "remove it (rm -r " + dir + ") and start the agent again, which creates it with mode " + createdMode(r)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return unsafe(fmt.Sprintf("is a symbolic link (to %s), not a directory", target),
			"someone may have planted it: remove it (rm "+dir+") and start the agent again, which creates the directory")
	}
	if !fi.IsDir() {
		return unsafe("is not a directory", remove)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return unsafe("has no owner this system reports", remove)
	}
	owner, perm := int(st.Uid), fi.Mode().Perm()
	switch r {
	case Private:
		if me := os.Geteuid(); owner != me {
			return unsafe(fmt.Sprintf("is owned by %s, not by you (%s)", describeUID(owner), describeUID(me)),
				"another user may be listening there: have root remove it, or choose another socket ($XDG_RUNTIME_DIR, $PODWARD_SOCKET or --socket)")
		}
		if perm != 0o700 {
			problem := fmt.Sprintf("has mode %04o (%s), not 0700", perm, fi.Mode())
			switch {
			case perm&0o022 != 0:
				problem += ": other users may replace the socket"
			case perm&0o077 != 0:
				problem += ": other users may reach the socket"
			}
			return unsafe(problem, remove)
		}
	case RootOwned:
		if owner != 0 {
			return unsafe(fmt.Sprintf("is owned by %s, not by root", describeUID(owner)),
				"another user may be listening there: remove it as root and start the agent again")
		}
		if perm&0o022 != 0 {
			return unsafe(fmt.Sprintf("has mode %04o (%s): users other than root may replace the socket", perm, fi.Mode()), remove)
		}
	}
	return nil
}

func createdMode(r Rule) string {
	if r == Private {
		return "0700"
	}
	return "0755"
}

// DescribeOwner is the owner and group of fi, as "uid N (name), gid M
// (name)", for a message that says who may use a file.
func DescribeOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "an unknown owner"
	}
	group := "gid " + strconv.Itoa(int(st.Gid))
	if g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid))); err == nil && g.Name != "" {
		group += " (" + g.Name + ")"
	}
	return describeUID(int(st.Uid)) + ", " + group
}

// describeUID is "uid N (name)", or "uid N" for a uid without a name.
func describeUID(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return "uid " + strconv.Itoa(uid)
}
