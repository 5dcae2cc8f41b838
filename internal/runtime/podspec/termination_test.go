package podspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
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

// The pod's 12 KiB are split evenly between its containers, as the
// kubelet's status manager splits them (status_manager.go,
// normalizeStatus); defer containers count too.
func TestTerminationMessageLimit(t *testing.T) {
	ctrs := func(n int) []v1.Container { return make([]v1.Container, n) }
	tests := map[string]struct {
		pod  *model.Pod
		want int
	}{
		"one container":   {pod: &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: ctrs(1)}}}, want: 12288},
		"three":           {pod: &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{InitContainers: ctrs(1), Containers: ctrs(2)}}}, want: 4096},
		"with defer":      {pod: &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: ctrs(2)}}, Defer: ctrs(2)}, want: 3072},
		"rounded down":    {pod: &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: ctrs(5)}}}, want: 2457},
		"many containers": {pod: &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: ctrs(48)}}}, want: 256},
	}
	for name, tc := range tests {
		if got := TerminationMessageLimit(tc.pod); got != tc.want {
			t.Errorf("%s: TerminationMessageLimit = %d, want %d", name, got, tc.want)
		}
	}
}

func TestTerminationMessagePath(t *testing.T) {
	for path, want := range map[string]string{
		"":                     "",
		"/dev/termination-log": "/dev/termination-log",
		"tmp/msg":              "/tmp/msg",
		"/tmp/../var/./msg":    "/var/msg",
	} {
		if got := TerminationMessagePath(&v1.Container{TerminationMessagePath: path}); got != want {
			t.Errorf("TerminationMessagePath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestNewTerminationMessage(t *testing.T) {
	pod := &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: make([]v1.Container, 2)}}}
	got := NewTerminationMessage(pod, &v1.Container{TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError}, "/f")
	if want := (TerminationMessage{File: "/f", FallbackToLogs: true, Limit: 6144}); got != want {
		t.Errorf("NewTerminationMessage = %+v, want %+v", got, want)
	}
	got = NewTerminationMessage(pod, &v1.Container{TerminationMessagePolicy: v1.TerminationMessageReadFile}, "")
	if want := (TerminationMessage{Limit: 6144}); got != want {
		t.Errorf("NewTerminationMessage = %+v, want %+v", got, want)
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
	failed := runtime.ExitStatus{ExitCode: 3, Reason: runtime.ReasonError}
	ok := runtime.ExitStatus{ExitCode: 0, Reason: runtime.ReasonCompleted}
	manyLines := ""
	for i := range 100 {
		manyLines += strings.Repeat("x", i%7) + "line\n"
	}
	tests := map[string]struct {
		file, log *string
		noFile    bool // no file mounted at all
		fallback  bool
		exit      runtime.ExitStatus
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
			exit: runtime.ExitStatus{ExitCode: 128, Reason: runtime.ReasonStartError, Message: `exec: "nope": not found`},
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
			file: str("details"), exit: runtime.ExitStatus{ExitCode: 137, Reason: runtime.ReasonOOMKilled, Message: "oom"},
			want: "oom: details",
		},
		"the runtime's message alone": {
			file: str(""), exit: runtime.ExitStatus{ExitCode: 1, Reason: runtime.ReasonError, Message: "the runtime says"},
			want: "the runtime says",
		},
		"cut to the container's share of the pod's budget": {
			file: str(strings.Repeat("m", 3000)), exit: ok, limit: 1024,
			want: strings.Repeat("m", 1024),
		},
		"the share counts the runtime's message too": {
			file: str("0123456789"), exit: runtime.ExitStatus{ExitCode: 1, Message: "rt"}, limit: 8,
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
	got := TerminationMessage{File: file, FallbackToLogs: true}.Message(runtime.ExitStatus{ExitCode: 1}, log)
	if !strings.HasPrefix(got, "Error on reading termination log "+file+": ") {
		t.Errorf("Message = %q, want it to say the file could not be read", got)
	}
}
