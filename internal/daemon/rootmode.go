package daemon

import (
	"fmt"
	"log/slog"
	"os"
)

// openRootBits are the permission bits of the state directory that let
// anyone but its owner in: its group's and others'.
const openRootBits = 0o077

// warnOpenRoot logs a warning when the state directory root lets its group
// or others read or enter it: it holds the pods' state (state.db: their
// specs with their env, the standalone Secrets), their volumes (Secrets
// and service account tokens written for them, emptyDirs) and their logs.
//
// A root podward makes is 0700 (the store's MkdirAll, and NewForeground's),
// tighter than the kubelet's usual 0750. A root that existed before with a
// wider mode is left as it is, as the kubelet leaves its --root-dir: the
// operator made it so, perhaps on purpose (a group that reads the logs),
// and a chmod at every start would undo that silently; the warning says
// what it exposes instead. A root that cannot be read is the store's
// error to report, not this one's.
func warnOpenRoot(root string, log *slog.Logger) {
	fi, err := os.Stat(root)
	if err != nil {
		return
	}
	if perm := fi.Mode().Perm(); perm&openRootBits != 0 {
		log.Warn("the state directory is open to other users: it holds the pods' secrets, volumes and logs; make it 0700 (chmod go-rwx)",
			"path", root, "mode", fmt.Sprintf("%#o", perm))
	}
}
