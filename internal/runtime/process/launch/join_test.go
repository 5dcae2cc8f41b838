package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A process with Spec.Join runs in the namespaces of another process (a
// container's), through the init helper, both when it waits for a
// go-ahead (StartTied with started: the namespaces come after its two
// pipes) and when it does not (Start: after one): it sees what was mounted
// there and its host name, resolves its directory and command there, and
// leaves this process's threads where they were; no descriptor of the
// namespaces is left to the command. A Join of this process's
// own namespaces opens nothing.
func TestJoinNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount and UTS namespaces need root")
	}
	if ns, err := OpenNamespaces(os.Getpid()); err != nil || ns.Mnt != nil || ns.UTS != nil {
		t.Fatalf("OpenNamespaces(self) = %+v, %v; want nothing to join", ns, err)
	}
	before := namespacesOfThreads(t)
	vol, target := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "tool"), []byte("#!/bin/sh\nfor fd in 3 4 5 6; do [ -e /proc/$$/fd/$fd ] && echo leaked $fd; done\necho \"$(hostname) $(pwd) $(cat file)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "file"), []byte("in the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The "container": mounts and a host name of its own, until it is
	// killed.
	cont, err := Start(context.Background(), Spec{
		Argv:     []string{"sleep", "100"},
		Env:      []string{"PATH=/usr/bin:/bin"},
		Dir:      "/",
		Mounts:   []Mount{{Source: vol, Target: target}},
		Hostname: "joined-pod",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cont.Process.Kill()
		_ = cont.Wait()
	}()
	mark := filepath.Join(t.TempDir(), "helper-ran")
	spec := Spec{
		Argv: []string{"tool"},
		Env:  []string{"PATH=" + target + ":/usr/bin:/bin", helperMarkEnv + "=" + mark},
		Dir:  target,
		// Not used: the container's namespace has its own.
		Mounts:   []Mount{{Source: t.TempDir(), Target: target}},
		Hostname: "not-this-one",
	}
	want := "joined-pod " + target + " in the volume"
	for name, start := range map[string]func(Spec, *os.File) (wait func() error, err error){
		"Start": func(spec Spec, out *os.File) (func() error, error) {
			cmd, err := Start(context.Background(), spec, out, out)
			if err != nil {
				return nil, err
			}
			return cmd.Wait, nil
		},
		"StartTied with started": func(spec Spec, out *os.File) (func() error, error) {
			p, err := StartTied(context.Background(), spec, out, out, func(int) {})
			if err != nil {
				return nil, err
			}
			return func() error { _, err := p.Wait(); return err }, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(mark)
			ns, err := OpenNamespaces(cont.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			if ns.Mnt == nil || ns.UTS == nil {
				t.Fatalf("OpenNamespaces = %+v; want both", ns)
			}
			spec.Join = ns
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			wait, err := start(spec, out)
			if err != nil {
				t.Fatal(err)
			}
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(out.Name()); strings.TrimSpace(string(b)) != want {
				t.Errorf("the process printed %q, want %q", b, want)
			}
			if _, err := os.Stat(mark); err != nil {
				t.Errorf("the process did not go through the init helper: %v", err)
			}
		})
	}
	for tid, ns := range namespacesOfThreads(t) {
		if b, ok := before[tid]; ok && b != ns {
			t.Errorf("thread %s: namespaces %s, were %s", tid, ns, b)
		}
	}
}
