package plannertest

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/planner"
)

// A file read and written back is the same file: -rewrite changes expected
// outputs only. The planner's files and the pod worker's are checked.
func TestRenderKeepsFiles(t *testing.T) {
	files := slices.Concat(Files(t, "../testdata/*.txt"), Files(t, "../../podworker/testdata/*.txt"))
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := parse(f, string(text))
		if err != nil {
			t.Fatal(err)
		}
		if got := render(chunks); got != string(text) {
			t.Errorf("%s: rendered back differently:\n%s", f, got)
		}
	}
}

func TestParseBlock(t *testing.T) {
	blocks, err := Parse("f.txt", "# prose\n\n# name\n# more\ncmd a=1 bare\n----\nout 1\nout 2\n\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2", len(blocks))
	}
	b := blocks[0]
	want := Directive{Cmd: "cmd", Args: []Arg{{Key: "a", Val: "1", HasVal: true}, {Key: "bare"}}, Pos: "f.txt:5"}
	if b.Name != "name" || b.Pos != "f.txt:3" || b.Want != "out 1\nout 2" || !reflect.DeepEqual(b.Directives, []Directive{want}) {
		t.Errorf("block = %+v", b)
	}
	if blocks[1].Name != "line 10" || blocks[1].Want != "" || len(blocks[1].Directives) != 0 {
		t.Errorf("second block = %+v", blocks[1])
	}
	if _, err := Parse("f.txt", "# c\ncmd\n"); err == nil || !strings.Contains(err.Error(), "f.txt:2") {
		t.Errorf("a directive outside a block: err = %v", err)
	}
}

func TestParseObserved(t *testing.T) {
	cases := map[string]planner.Observed{
		"waiting":       {State: planner.Waiting},
		"running(2s)":   {State: planner.Running, Started: true, StartedOnce: true, StartedAt: At(2 * time.Second)},
		"exited(3,10s)": {State: planner.Exited, StartedOnce: true, StartedAt: At(9 * time.Second), FinishedAt: At(10 * time.Second), ExitCode: 3},
		"running(0).notStarted.startedOnce.ranFrom(1s).steps(2).restarts(4)": {
			State: planner.Running, StartedOnce: true, StartedAt: At(time.Second), BackoffSteps: 2, Restarts: 4},
		"running(0).notStarted.started": {State: planner.Running, Started: true, StartedAt: At(0)},
		"running(0).signalled(4.5s).killed.killAt(9s)": {
			State: planner.Running, Started: true, StartedOnce: true, StartedAt: At(0),
			StopRequestedAt: At(4500 * time.Millisecond), SignalledAt: At(4500 * time.Millisecond), Killed: true, KillAt: At(9 * time.Second)},
		"exited(0,10s).probeKilled": {
			State: planner.Exited, StartedOnce: true, StartedAt: At(9 * time.Second), FinishedAt: At(10 * time.Second), ProbeKilled: true},
		"running(0).stopping(1s).signalled(3s)": {
			State: planner.Running, Started: true, StartedOnce: true, StartedAt: At(0), StopRequestedAt: At(time.Second), SignalledAt: At(3 * time.Second)},
	}
	for in, want := range cases {
		got, err := ParseObserved(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseObserved(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "run(0)", "running", "running(0,1)", "exited(x,1s)", "running(0).kiled", "running(0).steps", "running(0).steps(x)", "running(1)", "running(0).killAt(", "running()"} {
		if _, err := ParseObserved(bad); err == nil {
			t.Errorf("ParseObserved(%q) accepted", bad)
		}
	}
}

func TestPodOptions(t *testing.T) {
	p, err := Pod(ParseDirective("f.txt:1", "pod policy=Never grace=5 sidecar:s.preStop(drain,now).postStart(warm-up) main:m.stopSignal(SIGUSR1).livenessProbe(5).readinessProbe defer:d.startupProbe"))
	if err != nil {
		t.Fatal(err)
	}
	s, m, d := p.Spec.InitContainers[0], p.Spec.Containers[0], p.Defer[0]
	if p.Spec.RestartPolicy != v1.RestartPolicyNever || *p.Spec.TerminationGracePeriodSeconds != 5 || s.Name != "s" || m.Name != "m" || d.Name != "d" {
		t.Fatalf("pod = %+v", p.Spec)
	}
	if !slices.Equal(s.Lifecycle.PreStop.Exec.Command, []string{"drain", "now"}) || !slices.Equal(s.Lifecycle.PostStart.Exec.Command, []string{"warm-up"}) {
		t.Errorf("sidecar hooks = %+v", s.Lifecycle)
	}
	if *m.Lifecycle.StopSignal != v1.SIGUSR1 || m.LivenessProbe == nil || *m.LivenessProbe.TerminationGracePeriodSeconds != 5 || m.ReadinessProbe == nil || m.StartupProbe != nil {
		t.Errorf("main = %+v", m)
	}
	if d.StartupProbe == nil || d.StartupProbe.TerminationGracePeriodSeconds != nil || d.StartupProbe.Exec.Command[0] != "check" {
		t.Errorf("defer startup probe = %+v", d.StartupProbe)
	}
	for _, bad := range []string{"main", "main:", "main:m.", "main:m.preStop", "main:m.stopSignal", "main:m.bogus", "main:m.livenessProbe(x)", "main:m.livenessProbe(1,2)", "job:m"} {
		if _, err := Pod(ParseDirective("f.txt:1", "pod "+bad)); err == nil {
			t.Errorf("Pod(%q) accepted", bad)
		}
	}
}
