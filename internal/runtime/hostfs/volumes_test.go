package hostfs

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The cases of both runtimes' hostPath tests, which now share
// PrepareHostPath.
func TestPrepareHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	isDir := func(t *testing.T, p string) {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Errorf("%s not created as a directory: %v", p, err)
		}
	}
	isFile := func(t *testing.T, p string) {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s not created as a file: %v", p, err)
		}
	}
	not := func(p, what string) string { return "hostPath type check failed: " + p + " is not " + what }
	tests := map[string]struct {
		path    string
		typ     v1.HostPathType
		wantErr string // "" for none; else what the error contains
		check   func(t *testing.T, path string)
	}{
		"unset, missing":                    {path: filepath.Join(dir, "nothing")},
		"unset, through a file":             {path: filepath.Join(file, "x")},
		"directory exists":                  {path: dir, typ: v1.HostPathDirectory},
		"directory through a symlink":       {path: link, typ: v1.HostPathDirectory},
		"directory missing":                 {path: filepath.Join(dir, "nothing"), typ: v1.HostPathDirectory, wantErr: not(filepath.Join(dir, "nothing"), "a directory")},
		"directory is a file":               {path: file, typ: v1.HostPathDirectory, wantErr: not(file, "a directory")},
		"directory created":                 {path: filepath.Join(dir, "a", "b"), typ: v1.HostPathDirectoryOrCreate, check: isDir},
		"directory or create exists":        {path: dir, typ: v1.HostPathDirectoryOrCreate, check: isDir},
		"directory or create is a file":     {path: file, typ: v1.HostPathDirectoryOrCreate, wantErr: not(file, "a directory")},
		"file exists":                       {path: file, typ: v1.HostPathFile},
		"file missing":                      {path: filepath.Join(dir, "nothing"), typ: v1.HostPathFile, wantErr: not(filepath.Join(dir, "nothing"), "a file")},
		"file is a directory":               {path: dir, typ: v1.HostPathFile, wantErr: not(dir, "a file")},
		"file created":                      {path: filepath.Join(dir, "new"), typ: v1.HostPathFileOrCreate, check: isFile},
		"file not created without a parent": {path: filepath.Join(dir, "none", "new"), typ: v1.HostPathFileOrCreate, wantErr: "hostPath type check failed: open " + filepath.Join(dir, "none", "new") + ": no such file"},
		"file or create is a directory":     {path: dir, typ: v1.HostPathFileOrCreate, wantErr: not(dir, "a file")},
		"file or create is a socket":        {path: sock, typ: v1.HostPathFileOrCreate, wantErr: not(sock, "a file")},
		// Looked at, never opened: opening a FIFO would block.
		"file or create is a FIFO": {path: fifo, typ: v1.HostPathFileOrCreate, wantErr: not(fifo, "a file")},
		"file or create is kept": {path: file, typ: v1.HostPathFileOrCreate, check: func(t *testing.T, p string) {
			if b, err := os.ReadFile(p); err != nil || string(b) != "kept" {
				t.Errorf("%s = %q, %v: the file changed", p, b, err)
			}
		}},
		"socket":                      {path: sock, typ: v1.HostPathSocket},
		"socket is a file":            {path: file, typ: v1.HostPathSocket, wantErr: not(file, "a socket file")},
		"char device":                 {path: "/dev/null", typ: v1.HostPathCharDev},
		"char device is a file":       {path: file, typ: v1.HostPathCharDev, wantErr: not(file, "a character device")},
		"block device is char device": {path: "/dev/null", typ: v1.HostPathBlockDev, wantErr: not("/dev/null", "a block device")},
		"stat fails":                  {path: filepath.Join(file, "x"), typ: v1.HostPathDirectory, wantErr: "hostPath type check failed: stat " + filepath.Join(file, "x") + ": not a directory"},
		"unknown type":                {path: dir, typ: "Folder", wantErr: `hostPath type "Folder" is not supported`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := PrepareHostPath(tc.path, tc.typ)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("PrepareHostPath = %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("PrepareHostPath = %v, want %q", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, tc.path)
			}
		})
	}
}

func TestSupportsHostPathType(t *testing.T) {
	for typ, want := range map[v1.HostPathType]bool{
		v1.HostPathUnset: true, v1.HostPathDirectoryOrCreate: true, v1.HostPathDirectory: true,
		v1.HostPathFileOrCreate: true, v1.HostPathFile: true, v1.HostPathSocket: true,
		v1.HostPathCharDev: true, v1.HostPathBlockDev: true, "Folder": false, "directory": false,
	} {
		if got := SupportsHostPathType(typ); got != want {
			t.Errorf("SupportsHostPathType(%q) = %v, want %v", typ, got, want)
		}
	}
}

// An emptyDir is writable by anyone, umask or not, and by the fsGroup's
// files; preparing it again changes nothing.
func TestPrepareEmptyDir(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	gid := int64(os.Getgid())
	tests := map[string]struct {
		opts EmptyDir
		mode os.FileMode
	}{
		"plain":   {mode: os.ModeDir | 0o777},
		"fsGroup": {opts: EmptyDir{FSGroup: &gid}, mode: os.ModeDir | os.ModeSetgid | 0o777},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			for range 2 {
				if err := PrepareEmptyDir(dir, tc.opts); err != nil {
					t.Fatal(err)
				}
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != tc.mode {
				t.Errorf("mode = %v, want %v", fi.Mode(), tc.mode)
			}
			if st := fi.Sys().(*syscall.Stat_t); tc.opts.FSGroup != nil && int64(st.Gid) != *tc.opts.FSGroup {
				t.Errorf("group = %d, want %d", st.Gid, *tc.opts.FSGroup)
			}
		})
	}
	if err := PrepareEmptyDir(filepath.Join(t.TempDir(), "none", "vol"), EmptyDir{}); err == nil {
		t.Error("an emptyDir whose parent is missing was created")
	}
}

// A Memory emptyDir is a tmpfs of its size limit, mounted once however
// often it is prepared, and sticky as the kubelet's (a tmpfs mounted
// without a mode): with a fsGroup, drwxrwsrwt.
func TestPrepareEmptyDirTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mem")
	gid := int64(123)
	opts := EmptyDir{Tmpfs: true, SizeLimit: ptr.To(resource.MustParse("1Mi")), FSGroup: &gid}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	for range 2 {
		if err := PrepareEmptyDir(dir, opts); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o777; fi.Mode() != want {
		t.Errorf("mode = %v, want %v", fi.Mode(), want)
	}
	if st := fi.Sys().(*syscall.Stat_t); int64(st.Gid) != gid {
		t.Errorf("group = %d, want %d", st.Gid, gid)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if st.Type != tmpfsMagic || st.Blocks*uint64(st.Bsize) != 1<<20 {
		t.Errorf("%s: type %#x, %d bytes; want a tmpfs of 1 MiB", dir, st.Type, st.Blocks*uint64(st.Bsize))
	}
	// Mounted once: one unmount leaves the plain directory.
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	if mounted, err := IsMountpoint(dir); err != nil || mounted {
		t.Errorf("still a mountpoint after one unmount (%v): mounted twice", err)
	}
}

func TestPrepareLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "app", "0.log")
	off, err := PrepareLog(path)
	if err != nil || off != 0 {
		t.Fatalf("PrepareLog of a new log = %d, %v; want 0", off, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		t.Fatalf("log directory not created: %v", err)
	}
	if err := os.WriteFile(path, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if off, err := PrepareLog(path); err != nil || off != 8 {
		t.Fatalf("PrepareLog of an existing log = %d, %v; want 8", off, err)
	}
	if _, err := FileSize(filepath.Join(path, "x")); err == nil {
		t.Error("FileSize through a file did not fail")
	}
}
