package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// TestExamples runs the manifests of examples/ the way their comments say.
func TestExamples(t *testing.T) {
	needRoot(t)
	t.Parallel()
	tests := map[string]struct {
		file  string
		args  []string
		check func(t *testing.T, r result)
	}{
		"defer-demo": {
			file: "defer-demo.yaml",
			args: []string{"--timeout", "3s"},
			check: func(t *testing.T, r result) {
				r.mustFind(t, contains("Normal Scheduled pod/defer-demo"))
				r.mustFind(t, contains("Normal Started spec.initContainers{first}"))
				r.mustFind(t, contains("Normal Started spec.containers{prestop}"))
				r.assertBefore(t,
					[2]matcher{output("first", "started"), contains("Started spec.containers{prestop}")},
					[2]matcher{contains("podward: timeout"), contains("DeferStarted spec.deferContainers{last-but-one}")},
					[2]matcher{output("last-but-one", "entered deferContainers"), output("last", "finished")},
					[2]matcher{contains("DeferCompleted spec.deferContainers{last-but-one}"), contains("DeferStarted spec.deferContainers{last}")},
					[2]matcher{contains("DeferCompleted spec.deferContainers{last}"), contains("Killing spec.containers{prestop}")},
					[2]matcher{output("prestop", "got SIGTERM"), contains("podward: pod/defer-demo Succeeded")},
				)
				// The defer containers replace the preStop hook.
				if i := r.index(contains("preExitHook")); i >= 0 {
					t.Errorf("the preStop hook ran: %q", r.lines[i].text)
				}
			},
		},
		"config-demo": {
			file: "config-demo.yaml",
			check: func(t *testing.T, r result) {
				for _, line := range []string{
					"greeting from env: hello, podward",
					"greeting from file: hello",
					"password from env: s3cret",
					"password file: 400 6 bytes",
					`labels: app="config-demo"`,
				} {
					r.mustFind(t, output("app", line))
				}
				r.mustFind(t, contains("podward: pod/config-demo Succeeded"))
			},
		},
		"sidecar-job": {
			file: "sidecar-job.yaml",
			check: func(t *testing.T, r result) {
				r.assertBefore(t,
					// The sidecar has no startup probe: the job starts once
					// the sidecar's process runs, not once it printed.
					[2]matcher{contains("Started spec.initContainers{uploader}"), contains("Started spec.containers{job}")},
					[2]matcher{output("job", "result 5050"), contains("DeferStarted spec.deferContainers{upload}")},
					[2]matcher{output("uploader", "uploading result"), output("upload", "uploaded: 5050")},
					[2]matcher{output("upload", "uploaded: 5050"), contains("DeferCompleted spec.deferContainers{upload}")},
					[2]matcher{contains("DeferCompleted spec.deferContainers{upload}"), contains("Killing spec.initContainers{uploader}")},
					[2]matcher{output("upload", "uploaded: 5050"), output("uploader", "uploader stopping")},
					[2]matcher{output("uploader", "uploader stopping"), contains("podward: pod/sidecar-job Succeeded")},
				)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file, err := filepath.Abs(filepath.Join("..", "..", "examples", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, append([]string{"-f", file}, tc.args...)...)
			t.Logf("stdout:\n%s", r.stdout)
			r.assertCode(t, 0)
			tc.check(t, r)
		})
	}
}

// TestExitCode: 0 when every pod Succeeded, 1 when one Failed.
func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		manifest string
		wantCode int
		wantLine string
	}{
		"container exits 0": {
			manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: ok
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo done; exit 0"]
`,
			wantCode: 0,
			wantLine: "podward: pod/ok Succeeded",
		},
		"container exits 3": {
			manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo failing; exit 3"]
`,
			wantCode: 1,
			wantLine: "podward: pod/broken Failed",
		},
		"init container fails": {
			manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: bad-init
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: bash
    command: ["/bin/bash", "-c", "exit 1"]
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo must not run"]
`,
			wantCode: 1,
			wantLine: "podward: pod/bad-init Failed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			manifest := writeManifest(t, t.TempDir(), tc.manifest, nil)
			r := run(t, "-f", manifest)
			r.assertCode(t, tc.wantCode)
			last := r.lines[len(r.lines)-1].text
			if last != tc.wantLine {
				t.Errorf("last line %q, want %q; stdout:\n%s", last, tc.wantLine, r.stdout)
			}
			if i := r.index(contains("must not run")); i >= 0 {
				t.Errorf("the container ran after its init container failed; stdout:\n%s", r.stdout)
			}
		})
	}
}

// TestSeedDemoOnCRI runs the original defer-containers demo, unchanged, as
// real containers: its images come from the registry the CRI environment
// serves, the defer container's image is pre-pulled while the pod runs, and
// the pod is gone a few seconds after its defer containers finished, not
// after its 60 s grace period.
func TestSeedDemoOnCRI(t *testing.T) {
	needRoot(t)
	rt := runtimeEnv{bintest.CRI()}
	rt.Need(t)
	t.Parallel()
	file, err := filepath.Abs(filepath.Join("..", "..", "examples", "defer-demo-seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := rt.run(t, "-f", file, "--timeout", "5s")
	t.Logf("stdout:\n%s", r.stdout)
	// Its container is bash as PID 1 without a trap: it ignores SIGTERM and
	// is killed, so the pod ends Failed, as the kubelet would report it.
	r.assertCode(t, 1)
	timeout := contains("podward: timeout")
	r.assertBefore(t,
		[2]matcher{output("first", "started"), contains("Started spec.containers{prestop}")},
		[2]matcher{contains("Started spec.containers{prestop}"), re(`Pulling spec\.deferContainers\{last\} Pulling image "busybox" \(defer-container pre-pull for last\)`)},
		[2]matcher{re(`Pulled spec\.deferContainers\{last\} Successfully pulled image "busybox" .*pre-pull`), timeout},
		[2]matcher{timeout, contains("Created spec.deferContainers{last-but-one}")},
		// A container's output may come before the event of its start,
		// which is recorded once the runtime's start call returned.
		[2]matcher{timeout, output("last-but-one", "entered deferContainers")},
		[2]matcher{contains("DeferCompleted spec.deferContainers{last-but-one}"), contains("Created spec.deferContainers{last}")},
		[2]matcher{output("last-but-one", "entered deferContainers"), output("last", "finished")},
		[2]matcher{contains("DeferCompleted spec.deferContainers{last}"), contains("Killing spec.containers{prestop}")},
		[2]matcher{contains("Killing spec.containers{prestop}"), contains("podward: pod/defer-demo Failed")},
	)
	// At termination the defer containers start from pre-pulled images.
	for _, l := range r.lines[r.index(timeout):] {
		if strings.Contains(l.text, "Pulling ") {
			t.Errorf("pulled at termination: %q", l.text)
		}
	}
	done := r.mustFind(t, contains("DeferCompleted spec.deferContainers{last}"))
	if d := r.exited.Sub(done.at); d > 10*time.Second {
		t.Errorf("podward exited %v after the defer containers finished, want a few seconds (grace period 60 s)", d)
	} else {
		t.Logf("podward exited %v after the defer containers finished (grace period 60 s)", d.Round(time.Millisecond))
	}
}
