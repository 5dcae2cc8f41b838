package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podward/podward/internal/runtime/process/shim"
)

// execRecordSuffix ends the name of an exec's record, Root/execs/<pgid>.json;
// any other file there is a record's write that did not finish.
const execRecordSuffix = ".json"

// execRecord is the record of one running exec, in Root/execs/<pgid>.json,
// for the next Runtime on the root to kill what is left of the exec's
// process group should this one die first.
type execRecord struct {
	// Leader is the exec's main process, whose PID is its group's ID.
	Leader shim.Ident `json:"leader"`
}

func (r *Runtime) execsDir() string { return filepath.Join(r.root, "execs") }

// recordExec records the exec whose main process pid is this process's
// child, not reaped yet and not running its command yet
// (launch.StartTied's started), and returns the record's path for
// forgetExec. The record is written whole (a temporary file renamed) but
// not synced: it only matters if the agent dies, not the machine, whose
// next boot has none of these processes. A record that cannot be written
// does not stop the exec (a full disk must not fail every probe); it is
// logged, and returns "".
func (r *Runtime) recordExec(pid int, log *slog.Logger) string {
	path, err := writeExecRecord(r.execsDir(), pid)
	if err != nil {
		log.Error("record the exec's process group: should the agent die, its background processes would outlive it", "pgid", pid, "err", err)
		return ""
	}
	return path
}

func writeExecRecord(dir string, pid int) (path string, err error) {
	leader, err := shim.IdentOf(pid)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(execRecord{Leader: leader})
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+strconv.Itoa(pid)+"-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	path = filepath.Join(dir, strconv.Itoa(pid)+execRecordSuffix)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// forgetExec removes the record at path (none for ""), once every process
// of the exec's group was sent SIGKILL, before its main process is reaped
// (until then its group's ID cannot be reused), or once its start failed.
func (r *Runtime) forgetExec(path string, log *slog.Logger) {
	if path == "" {
		return
	}
	if err := os.Remove(path); err != nil {
		log.Error("remove the exec's record", "path", path, "err", err)
	}
}

// killLeftExecs kills, with SIGKILL, what is left of the process groups of
// the execs that an earlier Runtime on the root ran when it died, and
// removes their records. The exec's main process died with that Runtime's
// process (launch.StartTied); what it started in the background is still
// in its process group, which shim.KillGroup tells from a group that
// reused its ID. A record of another boot names nothing that runs, and is
// only removed. There is one record per exec that ran, so these are as
// many as the earlier Runtime's concurrent execs (its hooks, and probes
// bounded by the prober's workers), and the directory is empty after New.
func (r *Runtime) killLeftExecs() error {
	dir := r.execsDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), execRecordSuffix) {
			r.killLeftExec(path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Error("remove an exec's record", "path", path, "err", err)
		}
	}
	return nil
}

func (r *Runtime) killLeftExec(path string) {
	log := r.log.With("path", path)
	rec, err := readExecRecord(path)
	if err != nil {
		log.Error("read an exec's record", "err", err)
		return
	}
	log = log.With("pgid", rec.Leader.Pid)
	killed, err := shim.KillGroup(rec.Leader)
	switch {
	case err != nil:
		log.Error("kill what is left of an exec of an earlier agent", "err", err)
	case killed:
		log.Warn("killed what was left of an exec of an earlier agent (a hook or probe running when it died)")
	default:
		log.Debug("an exec of an earlier agent left nothing running")
	}
}

func readExecRecord(path string) (execRecord, error) {
	var rec execRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("decode %s: %w", path, err)
	}
	return rec, nil
}
