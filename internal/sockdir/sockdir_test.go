package sockdir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podward/podward/internal/sockdir"
)

// nobody is a uid that is not the test's, for a directory another user
// made.
const nobody = 65534

// userDirs points the per-user socket directories into a fresh directory
// and returns it.
func userDirs(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	if err := os.Mkdir(filepath.Join(base, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	return base
}

func TestRuleFor(t *testing.T) {
	base := userDirs(t)
	uid := strconv.Itoa(os.Geteuid())
	for dir, want := range map[string]sockdir.Rule{
		filepath.Join(base, "podward-"+uid):       sockdir.Private,
		filepath.Join(base, "podward-"+uid) + "/": sockdir.Private,
		filepath.Join(base, "run", "podward"):     sockdir.Private,
		"/run/podward":                            sockdir.RootOwned,
		filepath.Join(base, "podward-1"+uid):      sockdir.Unchecked,
		filepath.Join(base, "elsewhere"):          sockdir.Unchecked,
	} {
		if got := sockdir.RuleFor(dir); got != want {
			t.Errorf("RuleFor(%s) = %v, want %v", dir, got, want)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got := sockdir.RuleFor("podward"); got != sockdir.Unchecked {
		t.Errorf("without XDG_RUNTIME_DIR, RuleFor(podward) = %v", got)
	}
	if got := sockdir.Rule(9).String(); got != "Rule(9)" {
		t.Errorf("String of an unknown rule: %q", got)
	}
}

// plant makes the directory path the way a test case wants it.
type plant func(t *testing.T, path string)

func mkdir(mode fs.FileMode) plant {
	return func(t *testing.T, path string) {
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func chowned(mode fs.FileMode, uid int) plant {
	return func(t *testing.T, path string) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		mkdir(mode)(t, path)
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, path string) {
	target := filepath.Join(filepath.Dir(path), "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func file(t *testing.T, path string) {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A per-user directory must be the user's, mode 0700 and a real
// directory; Check and Prepare refuse any other, naming it and saying
// what is wrong, and Prepare changes nothing.
func TestPrivateDirectory(t *testing.T) {
	for name, tc := range map[string]struct {
		plant plant
		want  string // "" for a directory that is safe
	}{
		"the user's, 0700":        {plant: mkdir(0o700)},
		"another user's":          {plant: chowned(0o700, nobody), want: "is owned by uid 65534"},
		"another user's, 0777":    {plant: chowned(0o777, nobody), want: "is owned by uid 65534"},
		"readable by others":      {plant: mkdir(0o755), want: "has mode 0755"},
		"writable by all":         {plant: mkdir(0o777), want: "has mode 0777"},
		"group-accessible":        {plant: mkdir(0o750), want: "has mode 0750"},
		"a symbolic link":         {plant: symlink, want: "is a symbolic link"},
		"a file":                  {plant: file, want: "is not a directory"},
		"the user's, no x for us": {plant: mkdir(0o600), want: "has mode 0600"},
	} {
		t.Run(name, func(t *testing.T) {
			base := userDirs(t)
			for _, dir := range []string{sockdir.TempUserDir(), sockdir.RuntimeUserDir()} {
				if !strings.HasPrefix(dir, base) {
					t.Fatalf("per-user directory %s is not under %s", dir, base)
				}
				tc.plant(t, dir)
				before, err := os.Lstat(dir)
				if err != nil {
					t.Fatal(err)
				}
				for what, f := range map[string]func(string) error{"Check": sockdir.Check, "Prepare": sockdir.Prepare} {
					err := f(dir)
					if tc.want == "" {
						if err != nil {
							t.Errorf("%s(%s): %v", what, dir, err)
						}
						continue
					}
					var ue *sockdir.UnsafeError
					if !errors.Is(err, sockdir.ErrUnsafe) || !errors.As(err, &ue) || ue.Rule != sockdir.Private ||
						!strings.HasPrefix(err.Error(), "socket directory "+dir+" "+tc.want) {
						t.Errorf("%s(%s) = %v, want an UnsafeError saying the directory %s", what, dir, err, tc.want)
					}
				}
				after, err := os.Lstat(dir)
				if err != nil || after.Mode() != before.Mode() {
					t.Errorf("%s changed: %v, was %v (%v)", dir, after.Mode(), before.Mode(), err)
				}
			}
		})
	}
}

// Prepare makes a missing per-user directory, mode 0700 whatever the
// umask lets through; Check has nothing to say about a missing one.
func TestPrepareCreatesAPrivateDirectory(t *testing.T) {
	userDirs(t)
	for _, dir := range []string{sockdir.TempUserDir(), sockdir.RuntimeUserDir()} {
		if err := sockdir.Check(dir); err != nil {
			t.Errorf("Check of a missing %s: %v", dir, err)
		}
		if err := sockdir.Prepare(dir); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a directory with mode 0700", dir, fi.Mode(), err)
		}
		if err := sockdir.Prepare(dir); err != nil {
			t.Errorf("Prepare of an existing private directory: %v", err)
		}
	}
}

// Another directory is the user's choice: Prepare makes it (and its
// parents) 0755, and neither function judges it.
func TestUncheckedDirectory(t *testing.T) {
	base := userDirs(t)
	dir := filepath.Join(base, "some", "socket", "dir")
	if err := sockdir.Prepare(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := sockdir.Check(dir); err != nil {
		t.Errorf("Check of a directory the user chose: %v", err)
	}
	if err := sockdir.Prepare(dir); err != nil {
		t.Errorf("Prepare of a directory the user chose: %v", err)
	}
}

// The root agent's directory may let others traverse it (its socket's
// group reaches the socket), but only root may own it or write into it.
// RootOwned is applied to test directories: /run/podward is the machine's.
func TestRootOwnedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for name, tc := range map[string]struct {
		plant plant
		want  string
	}{
		"root's, 0755":           {plant: mkdir(0o755)},
		"root's, 0700":           {plant: mkdir(0o700)},
		"another user's":         {plant: chowned(0o755, nobody), want: "is owned by uid 65534"},
		"group-writable":         {plant: mkdir(0o775), want: "has mode 0775"},
		"writable by all":        {plant: mkdir(0o777), want: "has mode 0777"},
		"a symbolic link to one": {plant: symlink, want: "is a symbolic link"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "podward")
			tc.plant(t, dir)
			for what, f := range map[string]func(string) error{"Check": sockdir.RootOwned.Check, "Prepare": sockdir.RootOwned.Prepare} {
				err := f(dir)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.want != "" && (!errors.Is(err, sockdir.ErrUnsafe) || !strings.HasPrefix(err.Error(), "socket directory "+dir+" "+tc.want)):
					t.Errorf("%s = %v, want an UnsafeError saying the directory %s", what, err, tc.want)
				}
			}
		})
	}
}
