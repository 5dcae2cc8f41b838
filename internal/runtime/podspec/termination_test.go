package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

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
