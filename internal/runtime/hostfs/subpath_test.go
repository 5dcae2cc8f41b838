package hostfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/hostfs/beneath"
)

// bothResolvers runs f with openat2 and with the openat walk that stands in
// for it on kernels without it.
func bothResolvers(t *testing.T, f func(t *testing.T)) {
	for _, mode := range []string{"openat2", "walk"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "openat2" && !beneath.HasOpenat2() {
				t.Skip("the kernel has no openat2")
			}
			if mode == "walk" {
				t.Cleanup(beneath.ForceWalk())
			}
			f(t)
		})
	}
}

// assertEmpty fails unless dir, outside every volume, has nothing in it.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("outside the volume, %s has %q (%v); want nothing", dir, names, err)
	}
}

// A subPath is created when missing, may go through symlinks that stay in
// its volume, and is refused, before anything is created, when one leads
// out of it: as the kubelet's doSafeMakeDir
// (pkg/volume/util/subpath/subpath_linux.go).
func TestPrepareSubPath(t *testing.T) {
	tests := map[string]struct {
		sub      string
		wantPath string // Path of the SubPath, when no error
		wantErr  string
	}{
		"created":                     {sub: "a/b", wantPath: "a/b"},
		"the volume itself":           {sub: ".", wantPath: "."},
		"dots and slashes":            {sub: "./a//b/", wantPath: "a/b"},
		"an existing file":            {sub: "file", wantPath: "file"},
		"through a symlink inside":    {sub: "in/c", wantPath: "dir/c"},
		"an absolute symlink inside":  {sub: "abs/c", wantPath: "dir/c"},
		"a symlink to the volume":     {sub: "self/dir", wantPath: "dir"},
		"a symlink out":               {sub: "out", wantErr: `subPath "out" leads out of its volume`},
		"below a symlink out":         {sub: "out/new/deeper", wantErr: `subPath "out/new/deeper" leads out of its volume`},
		"up and out":                  {sub: "up/x", wantErr: `subPath "up/x" leads out of its volume`},
		"a dangling symlink out":      {sub: "dangling/x", wantErr: "a symlink to nothing"},
		"a dangling symlink inside":   {sub: "dangling-in/x", wantErr: "a symlink to nothing"},
		"through a file":              {sub: "file/x", wantErr: "not a directory"},
		"dot-dot":                     {sub: "a/../..", wantErr: `subPath "a/../..": must not contain '..'`},
		"absolute":                    {sub: "/etc", wantErr: `subPath "/etc": must be a relative path`},
		"a symlink out, the last one": {sub: "dir/out", wantErr: `subPath "dir/out" leads out of its volume`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				vol, outside := t.TempDir(), t.TempDir()
				for _, mk := range []error{
					os.Mkdir(filepath.Join(vol, "dir"), 0o755),
					os.WriteFile(filepath.Join(vol, "file"), []byte("data"), 0o644),
					os.Symlink("dir", filepath.Join(vol, "in")),
					os.Symlink(filepath.Join(vol, "dir"), filepath.Join(vol, "abs")),
					os.Symlink(".", filepath.Join(vol, "self")),
					os.Symlink(outside, filepath.Join(vol, "out")),
					os.Symlink(outside, filepath.Join(vol, "dir", "out")),
					os.Symlink("..", filepath.Join(vol, "up")),
					os.Symlink(filepath.Join(outside, "missing"), filepath.Join(vol, "dangling")),
					os.Symlink("missing", filepath.Join(vol, "dangling-in")),
				} {
					if mk != nil {
						t.Fatal(mk)
					}
				}
				s, err := PrepareSubPath(vol, tc.sub)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("PrepareSubPath = %+v, %v; want %q", s, err, tc.wantErr)
					}
					// What the volume holds is the pod's doing; a subPath
					// that is not relative is the caller's.
					var ce *ContentError
					if wantContent := !strings.Contains(tc.wantErr, "must"); errors.As(err, &ce) != wantContent {
						t.Errorf("PrepareSubPath's error %v: a ContentError is %v, want %v", err, !wantContent, wantContent)
					}
					assertEmpty(t, outside)
					if _, err := os.Lstat(filepath.Join(vol, "missing")); err == nil {
						t.Error("a dangling symlink's target was created")
					}
					return
				}
				if err != nil || s.Volume != vol || s.Path != tc.wantPath {
					t.Fatalf("PrepareSubPath = %+v, %v; want path %q in %s", s, err, tc.wantPath, vol)
				}
				if _, err := os.Stat(s.HostPath()); err != nil {
					t.Fatal(err)
				}
				f, err := s.Open()
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer f.Close()
				if fi, _ := os.Stat(s.HostPath()); !sameFile(t, f, fi) {
					t.Errorf("Open opened another file than %s", s.HostPath())
				}
				if again, err := PrepareSubPath(vol, tc.sub); err != nil || again != s {
					t.Errorf("again: %+v, %v; want %+v", again, err, s)
				}
				assertEmpty(t, outside)
			})
		})
	}
}

// The directories PrepareSubPath creates have the mode of the volume's own
// directory, setgid and sticky bits included and whatever the umask, and
// the group of a setgid parent, as the kubelet's SafeMakeDir given
// GetMode(volumePath) makes them: a pod's fsGroup emptyDir on a tmpfs
// (03777) gives drwxrwsrwt. A directory that exists keeps its mode.
func TestPrepareSubPathMode(t *testing.T) {
	old := unix.Umask(0o077)
	t.Cleanup(func() { unix.Umask(old) })
	gid := os.Getgid()
	if os.Geteuid() == 0 {
		gid = 123 // root may give the volume any group: show it is inherited
	}
	tests := map[string]os.FileMode{
		"emptyDir":                0o777,
		"emptyDir with fsGroup":   os.ModeSetgid | 0o777,
		"tmpfs emptyDir":          os.ModeSticky | 0o777,
		"tmpfs emptyDir, fsGroup": os.ModeSetgid | os.ModeSticky | 0o777,
		"a hostPath":              0o755,
	}
	for name, mode := range tests {
		t.Run(name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				vol := t.TempDir()
				if err := os.Mkdir(filepath.Join(vol, "kept"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(vol, -1, gid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(vol, mode); err != nil {
					t.Fatal(err)
				}
				for _, sub := range []string{"a/b", "kept/c"} {
					if _, err := PrepareSubPath(vol, sub); err != nil {
						t.Fatal(err)
					}
				}
				wantGID := -1
				if mode&os.ModeSetgid != 0 {
					wantGID = gid
				}
				for _, p := range []string{"a", "a/b"} {
					assertMode(t, filepath.Join(vol, p), os.ModeDir|mode, wantGID)
				}
				assertMode(t, filepath.Join(vol, "kept"), os.ModeDir|0o700, -1)
				assertMode(t, filepath.Join(vol, "kept/c"), os.ModeDir|mode, -1)
			})
		})
	}
}

// assertMode fails unless p has mode and, unless gid is -1, group gid.
func assertMode(t *testing.T, p string, mode os.FileMode, gid int) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != mode {
		t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
	}
	if st := fi.Sys().(*syscall.Stat_t); gid != -1 && int(st.Gid) != gid {
		t.Errorf("%s: group %d, want %d", p, st.Gid, gid)
	}
}

func sameFile(t *testing.T, f *os.File, fi os.FileInfo) bool {
	t.Helper()
	got, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(got, fi)
}

// A component swapped for a symlink after the check makes Open fail:
// what is mounted is what was checked, or nothing.
func TestSubPathOpenRefusesASwappedComponent(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		vol, outside := t.TempDir(), t.TempDir()
		s, err := PrepareSubPath(vol, "a/b")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(outside, "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(vol, "a")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "a")); err != nil {
			t.Fatal(err)
		}
		var ce *ContentError
		if f, err := s.Open(); err == nil {
			f.Close()
			t.Fatal("Open followed a symlink swapped in since the check")
		} else if !errors.As(err, &ce) {
			t.Errorf("Open: %v, want a ContentError", err)
		}
		// The last component, too.
		if err := os.Remove(filepath.Join(vol, "a")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "a")); err != nil {
			t.Fatal(err)
		}
		if f, err := (SubPath{Volume: vol, Path: "a"}).Open(); err == nil {
			f.Close()
			t.Fatal("Open followed a last component swapped for a symlink")
		}
	})
}

// The race of CVE-2017-1002101: a container that can write to its volume
// swaps a directory on the subPath's way for a symlink to outside and back,
// as fast as it can, while the runtime prepares, opens and (as root) binds
// subPaths through it again and again. Whatever each attempt returns,
// nothing is ever created outside, and nothing outside is ever opened or
// mounted: each mount gets a marker file written through it, which would
// show outside.
func TestSubPathSymlinkRace(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		base, outside := t.TempDir(), t.TempDir()
		vol := filepath.Join(base, "vol")
		if err := os.MkdirAll(filepath.Join(vol, "a", "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "swap")); err != nil {
			t.Fatal(err)
		}
		bind := os.Geteuid() == 0
		targets := filepath.Join(base, "volume-subpaths")
		t.Cleanup(func() {
			if err := RemoveSubPaths(targets); err != nil {
				t.Errorf("RemoveSubPaths: %v", err)
			}
		})

		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// vol/a is the directory, then the symlink, then the
				// directory again...
				if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(vol, "a"), unix.AT_FDCWD, filepath.Join(vol, "swap"), unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("exchange: %v", err)
					return
				}
			}
		}()
		var ok, refused int
		for i := 0; i < 5000 && (ok < 50 || refused < 50); i++ {
			if raceOnce(t, vol, targets, i, bind) {
				ok++
			} else {
				refused++
			}
			if t.Failed() {
				break
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("%d subPaths prepared and mounted, %d refused", ok, refused)
		assertEmpty(t, outside)
		if ok == 0 || refused == 0 {
			t.Fatalf("%d prepared, %d refused: the race never went both ways", ok, refused)
		}
	})
}

// raceOnce prepares, opens and, when bind, bind-mounts the subPath
// a/b/n<i> of vol, and checks that what it opened is inside vol. It says
// whether it got that far; a refusal is not an error.
func raceOnce(t *testing.T, vol, targets string, i int, bind bool) bool {
	t.Helper()
	s, err := PrepareSubPath(vol, fmt.Sprintf("a/b/n%d", i))
	if err != nil {
		return false
	}
	f, err := s.Open()
	if err != nil {
		return false
	}
	defer f.Close()
	// Where the kernel has the file now: vol/a or vol/swap, never outside.
	at, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !strings.HasPrefix(at, vol+"/") {
		t.Errorf("subPath %s opened %s (%v): outside its volume", s.HostPath(), at, err)
	}
	if !bind {
		return true
	}
	// A few targets, so that a target holding another subPath is
	// unmounted first, as when a subPathExpr changed.
	target := filepath.Join(targets, "vol", "c", strconv.Itoa(i%3))
	if err := BindSubPath(s, target); err != nil {
		return false
	}
	if err := os.WriteFile(filepath.Join(target, "marker"), nil, 0o644); err != nil {
		t.Errorf("write through the mount on %s: %v", target, err)
	}
	return true
}

// mountCount is how many mounts /proc/self/mountinfo has on p.
func mountCount(t *testing.T, p string) int {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == p {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A subPath is bind-mounted on the runtime's target, once however often it
// is bound, a file on a file; RemoveSubPaths unmounts every target and
// removes the layout, leaving the volume's data where it was.
func TestBindSubPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	base := t.TempDir()
	vol := filepath.Join(base, "vol")
	if err := os.MkdirAll(filepath.Join(vol, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "dir", "kept"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "file"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := filepath.Join(base, "volume-subpaths")
	t.Cleanup(func() { _ = RemoveSubPaths(targets) })
	dirTarget := filepath.Join(targets, "vol", "app", "0")
	fileTarget := filepath.Join(targets, "vol", "app", "1")
	for _, bound := range []struct{ sub, target, read, want string }{
		{"dir", dirTarget, filepath.Join(dirTarget, "kept"), "kept"},
		{"file", fileTarget, fileTarget, "file"},
	} {
		s, err := PrepareSubPath(vol, bound.sub)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := BindSubPath(s, bound.target); err != nil {
				t.Fatalf("BindSubPath(%s): %v", bound.sub, err)
			}
		}
		if n := mountCount(t, bound.target); n != 1 {
			t.Errorf("%d mounts on %s, want 1", n, bound.target)
		}
		if b, err := os.ReadFile(bound.read); err != nil || string(b) != bound.want {
			t.Errorf("read %s through the mount = %q, %v", bound.read, b, err)
		}
	}
	// Another subPath on a target replaces what was mounted there.
	other, err := PrepareSubPath(vol, "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := BindSubPath(other, dirTarget); err != nil {
		t.Fatal(err)
	}
	if n := mountCount(t, dirTarget); n != 1 {
		t.Errorf("%d mounts on %s after a rebind, want 1", n, dirTarget)
	}
	if _, err := os.Stat(filepath.Join(dirTarget, "kept")); err == nil {
		t.Error("the earlier subPath is still what the target shows")
	}

	for range 2 { // idempotent
		if err := RemoveSubPaths(targets); err != nil {
			t.Fatalf("RemoveSubPaths: %v", err)
		}
	}
	if _, err := os.Lstat(targets); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there: %v", targets, err)
	}
	for _, p := range []string{filepath.Join(vol, "dir", "kept"), filepath.Join(vol, "file")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the volume's %s is gone: %v", p, err)
		}
	}
}

// RemoveSubPaths removes only what is empty: a target that is not a mount
// but holds data stays, and the error says why.
func TestRemoveSubPathsKeepsData(t *testing.T) {
	targets := filepath.Join(t.TempDir(), "volume-subpaths")
	index := filepath.Join(targets, "vol", "app", "0")
	if err := os.MkdirAll(index, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, "data"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveSubPaths(targets); err == nil {
		t.Fatal("RemoveSubPaths of a target with data succeeded")
	}
	if b, err := os.ReadFile(filepath.Join(index, "data")); err != nil || string(b) != "data" {
		t.Fatalf("data = %q, %v", b, err)
	}
	if err := RemoveSubPaths(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatalf("RemoveSubPaths of nothing: %v", err)
	}
}

// A volume directory that is gone is the host's failure, not what the
// volume holds: not a ContentError.
func TestPrepareSubPathHostFailureIsNoContentError(t *testing.T) {
	vol := filepath.Join(t.TempDir(), "gone")
	_, err := PrepareSubPath(vol, "a")
	var ce *ContentError
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("PrepareSubPath in a missing volume: %v, want an error that is no ContentError", err)
	}
}
