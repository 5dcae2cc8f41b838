package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/exitstatus"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// The files of an instance directory.
const (
	SpecFile    = "spec.json"
	ControlFile = "control"
	// NoticesFile is a FIFO the shim writes its notices to (Notice); the
	// agent reads it.
	NoticesFile   = "notices"
	ShimFile      = "shim.json"
	ShimLogFile   = "shim.log"
	ContainerFile = "container.json"
	ExitFile      = "exit.json"
	// TerminationLogFile is the container's termination-message file,
	// bind-mounted at its terminationMessagePath; the runtime creates it.
	TerminationLogFile = "termination-log"
)

// ErrCorrupt is wrapped by Load's error when spec.json is not a spec: a
// file the machine's crash cut, say (no state file is fsynced, see
// writeJSON).
var ErrCorrupt = errors.New("corrupt instance state")

// Spec is what an instance runs, written once by the agent.
type Spec struct {
	ID           string `json:"id"`
	PodUID       string `json:"podUID"`
	PodName      string `json:"podName"`
	PodNamespace string `json:"podNamespace"`
	Container    string `json:"container"`
	Attempt      int    `json:"attempt"`
	// Process is the container's command, environment, directory and
	// mounts.
	Process launch.Spec `json:"process"`
	// Join, when set, is the main process of the running container whose
	// mount and UTS namespaces the container joins instead of making its
	// own (an ephemeral container's target, kubectl debug --target): the
	// shim opens them (Namespaces) just before the start, and a process
	// that is gone by then fails the start. Process's Mounts and Hostname
	// are then not used.
	Join *Ident `json:"join,omitempty"`
	// LogPath is the CRI log the shim appends to.
	LogPath string `json:"logPath"`
	// LogRotation is how the shim rotates it (crilog.LogFile); zero: never.
	LogRotation crilog.Rotation `json:"logRotation,omitzero"`
	// Mountpoints are the host paths the runtime created for the pod's
	// volume mounts and counts the pod as a user of; the shim does not use
	// them.
	Mountpoints []Mountpoint `json:"mountpoints,omitempty"`
	// TerminationMessage is how the shim makes the exit's message once
	// the container exited (its File, when set, is mounted by Process).
	TerminationMessage exitstatus.TerminationMessage `json:"terminationMessage"`
	// Tether, when not zero, is the PID of the process that starts the
	// shim (its parent): once that process is gone the shim kills the
	// container, so that the containers of a foreground `podward run` die
	// with it, even when it is SIGKILLed. Zero: the container outlives its
	// agent, for the next one to adopt.
	Tether int `json:"tether,omitempty"`
	// Order is the container's place in its pod's stop order, which the
	// shim keeps on its own when it is told to stop while no agent runs.
	// Nil (a spec of an older agent): every signal the shim gets goes to
	// the container at once.
	Order *Order `json:"order,omitempty"`
	// ShimCgroup, when set, is the cgroup the shim moves itself into once
	// the container runs (its pod's, never the container's own:
	// Process.Cgroup), which the shim kills once the container exited and
	// whose OOM kills it reads then: any makes the exit OOMKilled.
	ShimCgroup *cgroups.Placement `json:"shimCgroup,omitempty"`
	// OOMScoreAdj, when set, is the container's oom_score_adj, which the
	// shim gives it once forked; the shim itself then takes
	// shimOOMScoreAdj where it may.
	OOMScoreAdj *int `json:"oomScoreAdj,omitempty"`
	// Stdin, StdinOnce and TTY are the container's own: with TTY the
	// container runs on a pty whose master the shim holds (its output is
	// the log's stdout), with Stdin its standard input is a pipe whose
	// write end the shim holds, so that attaches come and go (attach.go).
	Stdin     bool `json:"stdin,omitempty"`
	StdinOnce bool `json:"stdinOnce,omitempty"`
	TTY       bool `json:"tty,omitempty"`
}

// Mountpoint is a path the runtime created on the host to mount a volume on.
type Mountpoint struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"` // else an empty file
}

// Started is the container's main process, the leader of its process group.
type Started struct {
	Process   Ident     `json:"process"`
	StartedAt time.Time `json:"startedAt"`
}

// Exit is how an instance ended.
type Exit struct {
	// ExitCode is 128+signal when a signal killed the process.
	ExitCode   int32             `json:"exitCode"`
	Reason     exitstatus.Reason `json:"reason"`
	Message    string            `json:"message,omitempty"`
	FinishedAt time.Time         `json:"finishedAt"`
}

// Status is e as the runtime reports it.
func (e *Exit) Status() exitstatus.Status {
	return exitstatus.Status{ExitCode: e.ExitCode, Reason: e.Reason, Message: e.Message, FinishedAt: e.FinishedAt}
}

// State is what an instance directory says, read at one moment. Files not
// written yet are nil.
type State struct {
	Spec      *Spec
	Shim      *Ident
	Container *Started
	Exit      *Exit
}

// Create makes the instance directory dir (its parent must exist) with its
// spec and its control and notices FIFOs. An instance directory without
// spec.json never had a shim and may be removed (after a crash of the
// machine, one that had: nothing of it runs any more).
func Create(dir string, spec *Spec) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	for _, fifo := range []string{ControlFile, NoticesFile} {
		if err := unix.Mkfifo(filepath.Join(dir, fifo), 0o600); err != nil {
			return &fs.PathError{Op: "mkfifo", Path: filepath.Join(dir, fifo), Err: err}
		}
	}
	return writeJSON(dir, SpecFile, spec)
}

// Load reads the instance directory dir. A missing spec.json is an error
// wrapping fs.ErrNotExist, one that cannot be decoded an error wrapping
// ErrCorrupt. The other files are optional: one that is missing, or that
// cannot be decoded (which only a crash of the machine can cause, and then
// nothing it names runs any more), is left nil.
func Load(dir string) (State, error) {
	var st State
	var spec Spec
	if err := readJSON(dir, SpecFile, &spec); err != nil {
		return st, err
	}
	st.Spec = &spec
	var shim Ident
	if ok, err := readOptional(dir, ShimFile, &shim); err != nil {
		return st, err
	} else if ok {
		st.Shim = &shim
	}
	var started Started
	if ok, err := readOptional(dir, ContainerFile, &started); err != nil {
		return st, err
	} else if ok {
		st.Container = &started
	}
	exit, err := LoadExit(dir)
	if err != nil {
		return st, err
	}
	st.Exit = exit
	return st, nil
}

// LoadExit reads exit.json of the instance directory dir: nil while the
// instance has not exited.
func LoadExit(dir string) (*Exit, error) {
	var exit Exit
	ok, err := readOptional(dir, ExitFile, &exit)
	if err != nil || !ok {
		return nil, err
	}
	return &exit, nil
}

// WriteExit records e as the instance's end (see writeJSON for how
// durably). The agent uses it for an instance whose shim died without
// writing one.
func WriteExit(dir string, e *Exit) error {
	return writeJSON(dir, ExitFile, e)
}

func readOptional(dir, name string, v any) (bool, error) {
	err := readJSON(dir, name, v)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
		return false, nil
	}
	return err == nil, err
}

func readJSON(dir, name string, v any) error {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Join(dir, name), err)
	}
	return nil
}

// writeJSON replaces dir/name with v's JSON, atomically: readers see the
// old file or the new one, never a part.
//
// Nothing is fsynced: what an instance directory says is read on this boot
// of the machine only, through the page cache, which an agent's or a
// shim's death does not lose. Only a crash of the machine does, and after
// it (a reboot) nothing an instance directory says is used: nothing of it
// runs any more, a file the crash cut reads as missing (Load; a missing
// exit is one of a shim that died), the agent drops the directories of its
// pods and of orphans, and a pod goes on from its own checkpoint (see
// docs/lifecycle.md, "Node shutdown").
// So an fsync here bought no guarantee, and cost one or two on the start
// (spec.json) and the stop (exit.json) of every container.
func writeJSON(dir, name string, v any) (err error) {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}
