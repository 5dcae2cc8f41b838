package crilog

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Rotation says when a container's log is rotated and how many of its
// files are kept, as the kubelet's --container-log-max-size and
// --container-log-max-files do.
type Rotation struct {
	// MaxSize is the size, in bytes, at which the log is rotated; 0 (or
	// less) never rotates it.
	MaxSize int64 `json:"maxSize"`
	// MaxFiles is how many files of the log are kept, the one being
	// written included; at least 2.
	MaxFiles int `json:"maxFiles"`
}

// The kubelet's defaults (--container-log-max-size 10Mi,
// --container-log-max-files 5).
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 5
)

// DefaultRotation is the kubelet's default rotation.
var DefaultRotation = Rotation{MaxSize: DefaultMaxSize, MaxFiles: DefaultMaxFiles}

// Enabled says whether logs rotate.
func (r Rotation) Enabled() bool { return r.MaxSize > 0 }

// Validate says what is wrong with r, naming the kubelet's flags.
func (r Rotation) Validate() error {
	if r.Enabled() && r.MaxFiles < 2 {
		return fmt.Errorf("container-log-max-files: %d is less than 2: the log being written and the one rotated last are always kept", r.MaxFiles)
	}
	return nil
}

// The names of rotated files, the kubelet's (pkg/kubelet/logs/
// container_log_manager.go): the log <path> is rotated to
// <path>.<timestamp>, which is compressed to <path>.<timestamp>.gz once a
// newer rotation exists; a compression in progress writes <path>.<timestamp>.gz.tmp.
const (
	rotatedTimeFormat = "20060102-150405"
	compressedSuffix  = ".gz"
	tmpSuffix         = ".tmp"
)

// RotatedName is what the log at path is renamed to when it is rotated at
// t: path.<YYYYMMDD-hhmmss>, in UTC. Two rotations within one second would
// have the same name: whoever rotates waits for the next second.
func RotatedName(path string, t time.Time) string {
	return path + "." + t.UTC().Format(rotatedTimeFormat)
}

// RotatedLogs returns the rotated files of the log at path, oldest first,
// without the leftovers of a rotation cut short (a temporary file, a file
// whose compressed copy is complete). They are what GetAllLogs of the
// kubelet returns, without path itself.
func RotatedLogs(path string) ([]string, error) {
	inUse, _, err := rotatedFiles(path)
	return inUse, err
}

// rotatedFiles lists the files of path's directory named path.*: those in
// use, sorted oldest first, and the leftovers.
func rotatedFiles(path string) (inUse, leftovers []string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list the rotated logs of %s: %w", path, err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), base+".") {
			names[e.Name()] = true
		}
	}
	for name := range names {
		full := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, tmpSuffix), !strings.HasSuffix(name, compressedSuffix) && names[name+compressedSuffix]:
			leftovers = append(leftovers, full)
		default:
			inUse = append(inUse, full)
		}
	}
	// The timestamps have a fixed width, so names sort by time.
	slices.Sort(inUse)
	slices.Sort(leftovers)
	return inUse, leftovers, nil
}

// PruneRotated tidies the rotated files of the log at path as the kubelet's
// container log manager does before it rotates: it removes the leftovers of
// rotations cut short, then the oldest rotated files so that at most keep
// are left, then compresses (gzip) all of them but the newest plain ones.
// It removes before it compresses, so that a nearly full disk gets room
// first. The kubelet calls it with keep = MaxFiles-2 and plain = 0 just
// before it renames the log (the rotated file it makes is the plain one);
// a writer that renames first and tidies afterwards calls it with keep =
// MaxFiles-1 and plain = 1. The first error stops it; what was done stays
// done, and the next call goes on from there.
func PruneRotated(path string, keep, plain int) error {
	inUse, leftovers, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	for _, f := range leftovers {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove a leftover of a log rotation: %w", err)
		}
	}
	keep = max(keep, 0)
	for len(inUse) > keep {
		if err := os.Remove(inUse[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove an old rotated log: %w", err)
		}
		inUse = inUse[1:]
	}
	for _, f := range inUse[:max(len(inUse)-plain, 0)] {
		if strings.HasSuffix(f, compressedSuffix) {
			continue
		}
		if err := compress(f); err != nil {
			return err
		}
	}
	return nil
}

// compress replaces the file at path by path.gz, through path.gz.tmp so
// that a compression cut short leaves a leftover, never a truncated .gz.
func compress(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("compress a rotated log: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("compress a rotated log: %w", err)
	}
	tmp := path + compressedSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("compress a rotated log: %w", err)
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		return fmt.Errorf("compress %s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", path, err)
	}
	if err := os.Rename(tmp, path+compressedSuffix); err != nil {
		return fmt.Errorf("compress %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("compress %s: remove the uncompressed file: %w", path, err)
	}
	return nil
}
