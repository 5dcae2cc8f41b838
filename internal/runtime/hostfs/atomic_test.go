package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var writeTime = time.Date(2026, 12, 6, 19, 30, 0, 0, time.UTC)

func readVisible(t *testing.T, dir, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestAtomicWriteLayoutAndModes(t *testing.T) {
	dir := t.TempDir()
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	changed, err := AtomicWrite(dir, Payload{
		"a":       {Data: []byte("A"), Mode: 0o644},
		"sub/b":   {Data: []byte("B"), Mode: 0o400},
		"sub/c/d": {Data: []byte("D"), Mode: 0o755},
	}, writeTime)
	if err != nil || !changed {
		t.Fatalf("AtomicWrite = %v, %v", changed, err)
	}
	data, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(data, "..2026_12_06_19_30_00.") {
		t.Fatalf("..data -> %q, %v; want a timestamped directory", data, err)
	}
	for name, want := range map[string]string{"a": "..data/a", "sub": "..data/sub"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %q", name, got, err, want)
		}
	}
	for p, mode := range map[string]fs.FileMode{"a": 0o644, "sub/b": 0o400, "sub/c/d": 0o755} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v (umask ignored)", p, fi.Mode().Perm(), mode)
		}
	}
	if got := readVisible(t, dir, "sub/c/d"); got != "D" {
		t.Errorf("sub/c/d = %q", got)
	}
}

func TestAtomicWriteSwapsAndRemovesStale(t *testing.T) {
	dir := t.TempDir()
	if _, err := AtomicWrite(dir, Payload{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("1"), Mode: 0o644}}, writeTime); err != nil {
		t.Fatal(err)
	}
	first, _ := os.Readlink(filepath.Join(dir, "..data"))
	changed, err := AtomicWrite(dir, Payload{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("1"), Mode: 0o644}}, writeTime.Add(time.Second))
	if err != nil || changed {
		t.Fatalf("same payload again: changed=%v, %v; want nothing written", changed, err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != first {
		t.Errorf("same payload swapped ..data to %q", again)
	}
	changed, err = AtomicWrite(dir, Payload{"a": {Data: []byte("2"), Mode: 0o644}, "c": {Data: []byte("2"), Mode: 0o600}}, writeTime.Add(time.Second))
	if err != nil || !changed {
		t.Fatalf("new payload: changed=%v, %v", changed, err)
	}
	if got := readVisible(t, dir, "a"); got != "2" {
		t.Errorf("a = %q after the swap", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale symlink b: %v, want it removed", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, first)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old data directory %s: %v, want it removed", first, err)
	}
	if changed, err := AtomicWrite(dir, Payload{"a": {Data: []byte("2"), Mode: 0o600}, "c": {Data: []byte("2"), Mode: 0o600}}, writeTime); err != nil || !changed {
		t.Errorf("mode change only: changed=%v, %v; want written", changed, err)
	}
}

func TestAtomicWriteRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "..x", "a/../b", "a//b", "./a"} {
		if _, err := AtomicWrite(t.TempDir(), Payload{p: {Data: []byte("x"), Mode: 0o644}}, writeTime); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
			t.Errorf("path %q: %v, want an error naming it", p, err)
		}
	}
}

// TestAtomicWriteReaderNeverSeesAMix: a reader that opens ..data and reads
// two files through it while the writer swaps generations finds both of
// one generation every time.
func TestAtomicWriteReaderNeverSeesAMix(t *testing.T) {
	dir := t.TempDir()
	write := func(gen int) {
		v := []byte(fmt.Sprint(gen))
		if _, err := AtomicWrite(dir, Payload{"a": {Data: v, Mode: 0o644}, "d/b": {Data: v, Mode: 0o644}}, writeTime); err != nil {
			t.Error(err)
		}
	}
	write(0)
	var stop atomic.Bool
	reads := make(chan int, 1)
	mixed := make(chan string, 1)
	go func() {
		n := 0
		defer func() { reads <- n }()
		for !stop.Load() {
			a, b, ok := readPair(dir)
			if !ok {
				continue
			}
			n++
			if a != b {
				mixed <- fmt.Sprintf("a=%q b=%q", a, b)
				return
			}
		}
	}()
	for gen := 1; gen <= 300; gen++ {
		write(gen)
	}
	stop.Store(true)
	select {
	case m := <-mixed:
		t.Fatalf("a reader saw a mix of two payloads: %s", m)
	case n := <-reads:
		if n == 0 {
			t.Fatal("the reader read nothing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not stop")
	}
}

// readPair opens ..data once and reads a and d/b beneath it; ok is false
// when the directory went away in between (a reader retries then).
func readPair(dir string) (a, b string, ok bool) {
	d, err := os.Open(filepath.Join(dir, "..data"))
	if err != nil {
		return "", "", false
	}
	defer d.Close()
	base := fmt.Sprintf("/proc/self/fd/%d", d.Fd())
	ad, err1 := os.ReadFile(base + "/a")
	bd, err2 := os.ReadFile(base + "/d/b")
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return string(ad), string(bd), true
}

func TestPrepareMemoryDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "v")
	if err := PrepareMemoryDir(dir); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if err := PrepareMemoryDir(dir); err != nil {
		t.Fatalf("again: %v", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		t.Errorf("%s is not a tmpfs (type %x)", dir, st.Type)
	}
	if err := RemoveVolumes(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
}

func TestAtomicWriteGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file another group needs root")
	}
	dir := t.TempDir()
	gid := int64(4321)
	if _, err := AtomicWrite(dir, Payload{"a": {Data: []byte("A"), Mode: 0o440, GID: &gid}}, writeTime); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "a"), &st); err != nil {
		t.Fatal(err)
	}
	if int64(st.Gid) != gid {
		t.Errorf("group %d, want %d", st.Gid, gid)
	}
	if changed, err := AtomicWrite(dir, Payload{"a": {Data: []byte("A"), Mode: 0o440, GID: &gid}}, writeTime); err != nil || changed {
		t.Errorf("same group again: changed=%v, %v", changed, err)
	}
	other := int64(4322)
	if changed, err := AtomicWrite(dir, Payload{"a": {Data: []byte("A"), Mode: 0o440, GID: &other}}, writeTime); err != nil || !changed {
		t.Errorf("another group: changed=%v, %v; want written", changed, err)
	}
}
