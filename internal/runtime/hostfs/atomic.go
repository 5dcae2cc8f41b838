package hostfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// File is one file of a Payload: its bytes, its permission bits and,
// when set, its owner (UID) and group (GID).
type File struct {
	Data     []byte
	Mode     fs.FileMode
	UID, GID *int64
}

// Payload is what a configMap, secret, downwardAPI or projected volume
// holds: each file by its path relative to the volume ("a", "dir/b").
type Payload map[string]File

// The names of the kubelet's layout in a volume written by AtomicWrite.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// maxPayloadFiles bounds a payload: a ConfigMap or Secret holds at
	// most 1 MiB, and no volume needs more files than this.
	maxPayloadFiles = 4096
)

// CheckPayloadPath refuses a payload path that is not a plain relative path
// inside its volume: empty, absolute, with a ".." element, or whose first
// element begins with ".." (the layout's own names).
func CheckPayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("must not be empty")
	case path.IsAbs(p):
		return errors.New("must be a relative path")
	case strings.HasPrefix(p, ".."):
		return errors.New("must not start with '..'")
	case slices.Contains(strings.Split(p, "/"), ".."):
		return errors.New("must not contain '..'")
	case path.Clean(p) != p:
		return errors.New("must be a clean path")
	}
	return nil
}

// AtomicWrite makes the directory dir (which must exist) hold exactly
// payload, in the kubelet's layout, so that a reader never sees a mix of
// two payloads:
//
//	dir/..2026_12_06_19_30_00.123456789   the files of the payload
//	dir/..data -> ..2026_12_06_19_30_00.123456789
//	dir/key    -> ..data/key              one per top-level path
//
// A new payload is written into a new timestamped directory (named from
// now, which the caller's clock gives), and ..data is swapped to it with
// one rename; the user-visible symlinks of paths no longer in the payload
// are removed, and the old directory last. When dir already holds payload
// (same paths, bytes and modes) nothing is written and changed is false.
// Files get exactly their Mode, umask or not; directories 0755. It is
// idempotent; it is not safe to call concurrently for one dir.
func AtomicWrite(dir string, payload Payload, now time.Time) (changed bool, err error) {
	if len(payload) > maxPayloadFiles {
		return false, fmt.Errorf("write volume %s: %d files, more than %d", dir, len(payload), maxPayloadFiles)
	}
	for p := range payload {
		if err := CheckPayloadPath(p); err != nil {
			return false, fmt.Errorf("write volume %s: path %q: %w", dir, p, err)
		}
	}
	old, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("write volume %s: %w", dir, err)
	}
	if old != "" {
		same, err := holds(filepath.Join(dir, old), payload)
		if err != nil {
			return false, fmt.Errorf("write volume %s: read %s: %w", dir, old, err)
		}
		if same {
			return false, linkVisible(dir, payload)
		}
	}
	ts, err := swapData(dir, payload, now)
	if err != nil {
		return false, fmt.Errorf("write volume %s: %w", dir, err)
	}
	if err := linkVisible(dir, payload); err != nil {
		return true, err
	}
	return true, removeOldData(dir, ts)
}

// removeOldData removes the timestamped directories of dir but current:
// the one ..data pointed at before, and any a crash left behind.
func removeOldData(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("write volume %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == current || !strings.HasPrefix(name, "..") || name == dataDirName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("write volume %s: remove %s: %w", dir, name, err)
		}
	}
	return nil
}

// swapData writes payload into a new timestamped directory of dir and
// points ..data at it with one rename. It returns the new directory's
// name.
func swapData(dir string, payload Payload, now time.Time) (string, error) {
	ts, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05.000000000_"))
	if err != nil {
		return "", err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return "", err
	}
	if err := writeFiles(ts, payload); err != nil {
		return "", errors.Join(err, os.RemoveAll(ts))
	}
	tmp := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return "", err
	}
	return filepath.Base(ts), os.Rename(tmp, filepath.Join(dir, dataDirName))
}

// writeFiles writes payload's files under dir, each with its own mode.
func writeFiles(dir string, payload Payload) error {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return err
		}
		if f.UID != nil || f.GID != nil {
			if err := os.Lchown(full, idOr(f.UID), idOr(f.GID)); err != nil {
				return err
			}
		}
		// WriteFile's mode is masked by the umask.
		if err := os.Chmod(full, f.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

// holds says whether the directory ts holds exactly payload.
func holds(ts string, payload Payload) (bool, error) {
	seen := 0
	err := filepath.WalkDir(ts, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(ts, p)
		if err != nil {
			return err
		}
		want, ok := payload[rel]
		if !ok {
			return errDiffers
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != want.Mode.Perm() || fi.Size() != int64(len(want.Data)) || !sameOwner(fi, want) {
			return errDiffers
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, want.Data) {
			return errDiffers
		}
		seen++
		return nil
	})
	if errors.Is(err, errDiffers) || errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && seen == len(payload), err
}

var errDiffers = errors.New("differs")

// sameOwner says whether the file fi has want's owner and group, those
// that are set.
func sameOwner(fi fs.FileInfo, want File) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return want.UID == nil && want.GID == nil
	}
	return (want.UID == nil || int64(st.Uid) == *want.UID) && (want.GID == nil || int64(st.Gid) == *want.GID)
}

// idOr is id for os.Lchown: -1 (unchanged) when unset.
func idOr(id *int64) int {
	if id == nil {
		return -1
	}
	return int(*id)
}

// linkVisible makes each top-level path of payload a symlink into ..data
// and removes the symlinks of top-level paths it no longer has. Only
// symlinks are removed: what else is in dir is not the writer's.
func linkVisible(dir string, payload Payload) error {
	top := map[string]bool{}
	for p := range payload {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		target := filepath.Join(dataDirName, name)
		if got, err := os.Readlink(link); err == nil && got == target {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write volume %s: %w", dir, err)
		}
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("write volume %s: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("write volume %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || top[e.Name()] || e.Type() != fs.ModeSymlink {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write volume %s: remove stale %s: %w", dir, e.Name(), err)
		}
	}
	return nil
}

// PrepareMemoryDir creates the directory dir (its parent must exist) and
// mounts a tmpfs of mode 0755 on it unless one is mounted there already:
// the home of a volume whose contents must never reach persistent disk (a
// secret's, a token's), as the kubelet's. It is idempotent.
func PrepareMemoryDir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return mountTmpfsMode(dir, nil, "0755")
}

// DataPath is where the path sub of a volume written by AtomicWrite at
// dir is: inside the timestamped directory ..data points at now, so that
// no user-visible symlink is crossed (a subPath may cross none) and, as in
// Kubernetes, a subPath mount keeps the contents it was made with. With no
// ..data in dir, it is sub.
func DataPath(dir, sub string) string {
	ts, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil {
		return sub
	}
	return filepath.Join(ts, sub)
}
