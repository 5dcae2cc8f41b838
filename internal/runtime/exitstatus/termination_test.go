package exitstatus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/crilog"
)

// The kubelet's figures (pkg/kubelet/container/runtime.go:
// MaxContainerTerminationMessageLength, MaxPodTerminationMessageLogLength,
// MaxContainerTerminationMessageLogLength,
// MaxContainerTerminationMessageLogLines).
func TestTerminationMessageLimitsAreTheKubelets(t *testing.T) {
	if MaxTerminationMessageFileBytes != 4096 || MaxPodTerminationMessageBytes != 12288 ||
		MaxTerminationMessageLogBytes != 2048 || MaxTerminationMessageLogLines != 80 {
		t.Errorf("limits %d, %d, %d, %d lines; the kubelet's are 4096, 12288, 2048, 80 lines",
			MaxTerminationMessageFileBytes, MaxPodTerminationMessageBytes, MaxTerminationMessageLogBytes, MaxTerminationMessageLogLines)
	}
}

// termFiles is a termination-message file and a CRI log in a test's
// directory. file "" and log "" leave them out.
func termFiles(t *testing.T, file, log *string) (filePath, logPath string) {
	t.Helper()
	dir := t.TempDir()
	filePath, logPath = filepath.Join(dir, "termination-log"), filepath.Join(dir, "0.log")
	if file != nil {
		if err := os.WriteFile(filePath, []byte(*file), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if log != nil {
		var b []byte
		for _, line := range strings.SplitAfter(*log, "\n") {
			if line == "" {
				continue
			}
			b = crilog.AppendRecord(b, crilog.Record{Time: time.Unix(1, 0), Stream: crilog.Stderr, Content: []byte(strings.TrimSuffix(line, "\n"))})
		}
		if err := os.WriteFile(logPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filePath, logPath
}

// TestTerminationMessage follows the kubelet's getTerminationMessage and
// convertToKubeContainerStatus (kuberuntime_container.go): the file when
// it says something; the log's tail only with FallbackToLogsOnError, only
// when the container failed and the file is empty; appended to the
// runtime's message.
func TestTerminationMessage(t *testing.T) {
	str := func(s string) *string { return &s }
	failed := Status{ExitCode: 3, Reason: Error}
	ok := Status{ExitCode: 0, Reason: Completed}
	manyLines := ""
	for i := range 100 {
		manyLines += strings.Repeat("x", i%7) + "line\n"
	}
	tests := map[string]struct {
		file, log *string
		noFile    bool // no file mounted at all
		fallback  bool
		exit      Status
		limit     int
		want      string
	}{
		"the file": {
			file: str("all done\n"), log: str("some output\n"), exit: ok,
			want: "all done\n",
		},
		"the file on a failure": {
			file: str("went wrong"), log: str("output\n"), exit: failed, fallback: true,
			want: "went wrong",
		},
		"the file's last 4 KiB": {
			file: str("head" + strings.Repeat("a", 5000) + "tail"), exit: failed,
			want: strings.Repeat("a", 4092) + "tail",
		},
		"File policy: an empty file and a failure say nothing": {
			file: str(""), log: str("boom\n"), exit: failed,
			want: "",
		},
		"fallback on a failure with an empty file": {
			file: str(""), log: str("starting\nboom\n"), exit: failed, fallback: true,
			want: "starting\nboom\n",
		},
		"fallback with a missing file": {
			log: str("boom\n"), exit: failed, fallback: true,
			want: "boom\n",
		},
		"fallback without a file mounted": {
			noFile: true, log: str("boom\n"), exit: failed, fallback: true,
			want: "boom\n",
		},
		"no fallback on success": {
			file: str(""), log: str("bye\n"), exit: ok, fallback: true,
			want: "",
		},
		"no fallback for a start error": {
			file: str(""), log: str("stale\n"), fallback: true,
			exit: Status{ExitCode: 128, Reason: StartError, Message: `exec: "nope": not found`},
			want: `exec: "nope": not found`,
		},
		"fallback: the last 80 lines": {
			file: str(""), log: str(manyLines), exit: failed, fallback: true,
			want: strings.Join(strings.SplitAfter(manyLines, "\n")[20:], ""),
		},
		"fallback: at most 2 KiB": {
			file: str(""), log: str(strings.Repeat("y", 3000) + "\n"), exit: failed, fallback: true,
			want: strings.Repeat("y", 2047) + "\n",
		},
		"fallback with a missing log": {
			file: str(""), exit: failed, fallback: true,
			want: "",
		},
		"after the runtime's message": {
			file: str("details"), exit: Status{ExitCode: 137, Reason: OOMKilled, Message: "oom"},
			want: "oom: details",
		},
		"the runtime's message alone": {
			file: str(""), exit: Status{ExitCode: 1, Reason: Error, Message: "the runtime says"},
			want: "the runtime says",
		},
		"cut to the container's share of the pod's budget": {
			file: str(strings.Repeat("m", 3000)), exit: ok, limit: 1024,
			want: strings.Repeat("m", 1024),
		},
		"the share counts the runtime's message too": {
			file: str("0123456789"), exit: Status{ExitCode: 1, Message: "rt"}, limit: 8,
			want: "rt: 0123",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			file, log := termFiles(t, tc.file, tc.log)
			if tc.noFile {
				file = ""
			}
			tm := TerminationMessage{File: file, FallbackToLogs: tc.fallback, Limit: tc.limit}
			if got := tm.Message(tc.exit, log); got != tc.want {
				t.Errorf("Message = %q, want %q", got, tc.want)
			}
		})
	}
}

// A file that exists but cannot be read says so, and the log is not read
// instead (getTerminationMessage).
func TestTerminationMessageUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "termination-log")
	if err := os.Mkdir(file, 0o755); err != nil { // a directory: read fails
		t.Fatal(err)
	}
	boom := "boom\n"
	_, log := termFiles(t, nil, &boom)
	got := TerminationMessage{File: file, FallbackToLogs: true}.Message(Status{ExitCode: 1}, log)
	if !strings.HasPrefix(got, "Error on reading termination log "+file+": ") {
		t.Errorf("Message = %q, want it to say the file could not be read", got)
	}
}

func TestReadFileTail(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"":                     "",
		"short":                "short",
		"0123456789":           "0123456789",
		"0123456789abcdefghij": "abcdefghij",
	} {
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readFileTail(path, 10)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("readFileTail(%q, 10) = %q, want %q", content, got, want)
		}
	}
	if _, err := readFileTail(filepath.Join(dir, "none"), 10); !os.IsNotExist(err) {
		t.Errorf("readFileTail of a missing file: %v, want not-exist", err)
	}
}
