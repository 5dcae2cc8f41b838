package exitstatus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/podward/podward/internal/crilog"
)

// The kubelet's limits on termination messages (pkg/kubelet/container,
// runtime.go).
const (
	// MaxTerminationMessageFileBytes is how much of a container's
	// termination-message file is read: its last 4 KiB.
	MaxTerminationMessageFileBytes = 4 * 1024
	// MaxPodTerminationMessageBytes is what a pod's containers' messages
	// may take together: each container gets an equal share.
	MaxPodTerminationMessageBytes = 12 * 1024
	// MaxTerminationMessageLogBytes and MaxTerminationMessageLogLines bound
	// a message taken from the log (FallbackToLogsOnError): the last 2 KiB
	// of its last 80 lines.
	MaxTerminationMessageLogBytes = 2 * 1024
	MaxTerminationMessageLogLines = 80
)

// TerminationMessage is how the message of a container instance is found
// once it exited. A runtime sets it up when it starts the instance
// (podspec.NewTerminationMessage), keeps it with the instance (it is JSON,
// for state on disk: the process runtime's spec.json), and applies it to
// the exit (Message).
type TerminationMessage struct {
	// File is the instance's termination-message file on the host,
	// mounted at podspec.TerminationMessagePath; "" when it has none.
	File string `json:"file,omitempty"`
	// FallbackToLogs is terminationMessagePolicy FallbackToLogsOnError.
	FallbackToLogs bool `json:"fallbackToLogs,omitempty"`
	// Limit is the most bytes the message may have
	// (podspec.TerminationMessageLimit); 0 is the whole pod's budget.
	Limit int `json:"limit,omitempty"`
}

// Message is the message of an instance that ended as exit says (its
// Message is the runtime's own, if any), whose CRI log is logPath, made as
// the kubelet makes it (kuberuntime_container.go:
// convertToKubeContainerStatus, getTerminationMessage,
// readLastStringFromContainerLogs; status_manager.go: normalizeStatus):
//
//   - the file's last MaxTerminationMessageFileBytes bytes; no file, or a
//     missing one, says nothing; one that cannot be read says why;
//   - with FallbackToLogs, when the instance failed (a non-zero exit code,
//     but not a start error: a container that never ran has no log) and
//     the file said nothing, the log's last MaxTerminationMessageLogLines
//     lines, at most MaxTerminationMessageLogBytes bytes of them;
//   - that text after the runtime's own message and ": ", or alone;
//   - all of it cut to its first Limit bytes.
//
// It reads the files; call it once the instance's log is complete.
func (t TerminationMessage) Message(exit Status, logPath string) string {
	fallback := t.FallbackToLogs && exit.ExitCode != 0 && exit.Reason != StartError
	text, checkLogs := t.fromFile(fallback)
	if checkLogs {
		text = fromLog(logPath)
	}
	msg := exit.Message
	if text != "" {
		if msg != "" {
			msg += ": "
		}
		msg += text
	}
	limit := t.Limit
	if limit <= 0 {
		limit = MaxPodTerminationMessageBytes
	}
	if len(msg) > limit {
		msg = msg[:limit]
	}
	return msg
}

// fromFile is what the file says, and whether the log must be read
// instead (when fallback and the file said nothing).
func (t TerminationMessage) fromFile(fallback bool) (string, bool) {
	if t.File == "" {
		return "", fallback
	}
	data, err := readFileTail(t.File, MaxTerminationMessageFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fallback
	}
	if err != nil {
		return fmt.Sprintf("Error on reading termination log %s: %v", t.File, err), false
	}
	return string(data), fallback && len(data) == 0
}

// fromLog is the tail of the log at path for a message; a missing log (the
// container wrote nothing) says nothing.
func fromLog(path string) string {
	data, err := crilog.ReadTail(path, MaxTerminationMessageLogLines, MaxTerminationMessageLogBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(data)
}

// readFileTail returns the last limit bytes of the file at path, all of it
// when it is shorter, reading no more than that (the kubelet's
// tail.ReadAtMost): a container may have written any amount.
func readFileTail(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(fi.Size()-int64(limit), 0)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, int64(limit)))
}
