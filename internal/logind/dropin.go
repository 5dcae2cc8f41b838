package logind

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultDropInDir is logind's drop-in directory (logind.conf(5)).
const DefaultDropInDir = "/etc/systemd/logind.conf.d"

// DropInName is the drop-in podward writes there (the kubelet's is
// 99-kubelet.conf): late in the order, so that it wins.
const DropInName = "99-podward.conf"

// writeDropIn writes, in dir, the drop-in that sets logind's
// InhibitDelayMaxSec to delay (whole seconds, rounded up), and returns its
// path. The file is replaced whole: logind never reads half of it.
func writeDropIn(dir string, delay time.Duration) (string, error) {
	secs := (delay + time.Second - 1) / time.Second
	content := fmt.Sprintf("# Written by podward: logind waits this long for the node shutdown (its budget)\n# before the machine goes down.\n[Login]\nInhibitDelayMaxSec=%d\n", secs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("logind drop-in directory: %w", err)
	}
	path := filepath.Join(dir, DropInName)
	// Not named *.conf, so that logind never reads it while it is written.
	tmp, err := os.CreateTemp(dir, "."+DropInName+".*")
	if err != nil {
		return "", fmt.Errorf("logind drop-in %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("logind drop-in %s: %w", path, err)
	}
	return path, nil
}
