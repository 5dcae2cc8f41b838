package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Start runs a process with mounts and a host name in namespaces of its
// own without the init helper (whose exec of this binary costs tens of
// milliseconds per container start), and leaves every thread of this process in
// the namespaces it had: nothing of the container's mounts or name shows
// here, nor in what this process starts next.
func TestStartIsolatedLeavesThisProcessAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount and UTS namespaces need root")
	}
	before := namespacesOfThreads(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	vol, target := t.TempDir(), t.TempDir()
	mark := filepath.Join(t.TempDir(), "helper-ran")
	if err := os.WriteFile(filepath.Join(vol, "file"), []byte("in the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	spec := Spec{
		Argv:     []string{"sh", "-c", `echo "$(hostname) $(cat file)"`},
		Env:      []string{"PATH=/usr/bin:/bin", helperMarkEnv + "=" + mark},
		Dir:      target,
		Mounts:   []Mount{{Source: vol, Target: target}},
		Hostname: "isolated-pod",
	}
	cmd, err := Start(context.Background(), spec, out, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out.Name()); strings.TrimSpace(string(b)) != "isolated-pod in the volume" {
		t.Fatalf("the process printed %q", b)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the process went through the init helper")
	}
	if _, err := os.Stat(filepath.Join(target, "file")); !os.IsNotExist(err) {
		t.Fatalf("the mount shows on the host: stat = %v", err)
	}
	if now, _ := os.Hostname(); now != host {
		t.Fatalf("host name %q, was %q", now, host)
	}
	for tid, ns := range namespacesOfThreads(t) {
		if b, ok := before[tid]; ok && b != ns {
			t.Errorf("thread %s: namespaces %s, were %s", tid, ns, b)
		}
		if ns != before["self"] {
			t.Errorf("thread %s: namespaces %s, the process's %s", tid, ns, before["self"])
		}
	}
}

// namespacesOfThreads are the mount and UTS namespaces of each thread of this
// process, and of the process itself ("self").
func namespacesOfThreads(t *testing.T) map[string]string {
	t.Helper()
	read := func(dir string) string {
		var ids []string
		for _, ns := range []string{"mnt", "uts"} {
			id, err := os.Readlink(filepath.Join(dir, "ns", ns))
			if err != nil {
				return "gone" // a thread that ended meanwhile
			}
			ids = append(ids, id)
		}
		return strings.Join(ids, " ")
	}
	m := map[string]string{"self": read("/proc/self")}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if ns := read(filepath.Join("/proc/self/task", task.Name())); ns != "gone" {
			m[task.Name()] = ns
		}
	}
	return m
}
