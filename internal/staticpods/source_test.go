package staticpods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podward/podward/internal/agent"
)

func TestFileAddedCreatesItsPods(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", docs(pod("web", "nginx:1"), pod("cache", "redis:7")))

	h.fake.waitFor(t, "both pods created", all(
		applied("default/web", agent.Created, 1),
		applied("default/cache", agent.Created, 1),
	))
	calls, reports := h.fake.snapshot()
	for _, c := range calls {
		if got := c.pod.Annotations[SourceAnnotation]; got != "file:"+h.path("web.yaml") {
			t.Errorf("%s: %s = %q, want file:%s", c.key, SourceAnnotation, got, h.path("web.yaml"))
		}
		if got := c.pod.Annotations[ConfigSourceAnnotation]; got != "file" {
			t.Errorf("%s: %s = %q, want file", c.key, ConfigSourceAnnotation, got)
		}
	}
	if len(reports) != 0 {
		t.Errorf("reports = %v, want none", reports)
	}
}

func TestFileChangedReplacesChangedPodsOnly(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", docs(pod("web", "nginx:1"), pod("cache", "redis:7")))
	h.fake.waitFor(t, "both pods created", applied("default/cache", agent.Created, 1))

	h.write("web.yaml", docs(pod("web", "nginx:2"), pod("cache", "redis:7")))
	h.fake.waitFor(t, "web replaced, cache left alone", all(
		applied("default/web", agent.Replaced, 1),
		applied("default/cache", agent.Unchanged, 1),
	))
	calls, _ := h.fake.snapshot()
	if n := count(calls, "apply", "default/cache", agent.Replaced); n != 0 {
		t.Errorf("the unchanged pod was replaced %d times", n)
	}
	if n := count(calls, "delete", "default/web", 0) + count(calls, "delete", "default/cache", 0); n != 0 {
		t.Errorf("%d deletes, want none: %s", n, describe(calls))
	}
}

func TestFileRewrittenUnchangedReplacesNothing(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web applied again", applied("default/web", agent.Unchanged, 1))
	calls, _ := h.fake.snapshot()
	if n := count(calls, "apply", "default/web", agent.Replaced) + count(calls, "delete", "default/web", 0); n != 0 {
		t.Errorf("an unchanged file replaced or deleted its pod: %s", describe(calls))
	}
}

func TestFileRenamedIntoPlace(t *testing.T) {
	h := newHarness(t)
	h.start()
	// As editors and config tools save: write a hidden temporary file,
	// then rename it over the manifest.
	renameIn := func(content string) {
		tmp := h.path(".web.yaml.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, h.path("web.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	renameIn(pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))
	renameIn(pod("web", "nginx:2"))
	h.fake.waitFor(t, "web replaced", applied("default/web", agent.Replaced, 1))
	calls, reports := h.fake.snapshot()
	if len(calls) != 2 || len(reports) != 0 {
		t.Errorf("the temporary file was looked at: calls %s, reports %v", describe(calls), reports)
	}
}

// An editor that keeps a backup renames the file away, then writes a new
// one: the pods must not be deleted in between.
func TestFileSavedWithBackupKeepsItsPods(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	if err := os.Rename(h.path("web.yaml"), h.path("web.yaml~")); err != nil {
		t.Fatal(err)
	}
	h.write("web.yaml", pod("web", "nginx:2"))
	h.fake.waitFor(t, "web replaced", applied("default/web", agent.Replaced, 1))
	h.clk.Step(DefaultSettleDelay)
	h.sync()
	calls, _ := h.fake.snapshot()
	if n := count(calls, "delete", "default/web", 0); n != 0 {
		t.Errorf("web was deleted while its file was being saved: %s", describe(calls))
	}
}

func TestPodRemovedFromFileIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", docs(pod("web", "nginx:1"), pod("cache", "redis:7")))
	h.fake.waitFor(t, "both pods created", applied("default/cache", agent.Created, 1))

	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "cache deleted", deleted("default/cache", 1))
	calls, _ := h.fake.snapshot()
	assertOwnGrace(t, calls)
	if count(calls, "delete", "default/web", 0) != 0 || !h.fake.has("default/web") {
		t.Errorf("the pod still in the file was deleted: %s", describe(calls))
	}
}

func TestFileRemovedDeletesItsPodsGracefully(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", docs(pod("web", "nginx:1"), pod("cache", "redis:7")))
	h.write("db.yaml", pod("db", "postgres:17"))
	h.fake.waitFor(t, "pods created", all(
		applied("default/cache", agent.Created, 1),
		applied("default/db", agent.Created, 1),
	))

	if err := os.Remove(h.path("web.yaml")); err != nil {
		t.Fatal(err)
	}
	h.settleUntil("web.yaml", DefaultSettleDelay, "the file's pods deleted", all(
		deleted("default/web", 1),
		deleted("default/cache", 1),
	))
	calls, _ := h.fake.snapshot()
	assertOwnGrace(t, calls)
	if count(calls, "delete", "default/db", 0) != 0 || !h.fake.has("default/db") {
		t.Errorf("another file's pod was deleted: %s", describe(calls))
	}
}

func TestBadFileIsReportedAndLeavesPodsAlone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    string // in the reported error
	}{
		{
			name:    "yaml error",
			content: "apiVersion: v1\nkind: Pod\nmetadata: [name: web\n",
			want:    "yaml",
		},
		{
			name:    "unknown field",
			content: strings.Replace(pod("web", "nginx:2"), "image:", "imagee:", 1),
			want:    "spec.containers[0].imagee: unknown field",
		},
		{
			name:    "one invalid pod rejects the whole file",
			content: docs(pod("web", "nginx:2"), pod("sidecar", `""`)),
			want:    "pod default/sidecar: invalid pod: spec.containers[0].image: Required value",
		},
		{
			name:    "pod declared twice",
			content: docs(pod("web", "nginx:2"), pod("web", "nginx:3")),
			want:    "pod default/web: declared more than once",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start()
			h.write("web.yaml", pod("web", "nginx:1"))
			h.write("db.yaml", pod("db", "postgres:17"))
			h.fake.waitFor(t, "pods created", all(
				applied("default/web", agent.Created, 1),
				applied("default/db", agent.Created, 1),
			))

			h.write("web.yaml", tc.content)
			h.fake.waitFor(t, "the bad file reported", func(_ []call, reports []report) bool {
				return len(reportsFor(reports, h.path("web.yaml"))) == 1
			})
			_, reports := h.fake.snapshot()
			if err := reports[0].err; !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reported %q, want it to contain %q", err, tc.want)
			}

			// The same bad content again is not reported again; other files
			// go on being applied.
			h.write("web.yaml", tc.content)
			h.write("cache.yaml", pod("cache", "redis:7"))
			h.fake.waitFor(t, "another file applied", applied("default/cache", agent.Created, 1))
			h.sync()
			calls, reports := h.fake.snapshot()
			if len(reports) != 1 {
				t.Errorf("reports = %v, want the one", reports)
			}
			want := "apply default/web created, apply default/db created, apply default/cache created"
			if !strings.HasPrefix(describe(calls), want) {
				t.Errorf("calls = %s, want %s then unchanged applies", describe(calls), want)
			}
			for _, c := range calls {
				if c.op == "delete" || c.result == agent.Replaced || (c.key != "default/web" && c.key != "default/db" && c.key != "default/cache") {
					t.Errorf("the bad file changed pods: %s", describe(calls))
					break
				}
			}
			if !h.fake.has("default/web") {
				t.Error("the bad file's pod is gone")
			}

			// Fixing the file applies it.
			h.write("web.yaml", pod("web", "nginx:2"))
			h.fake.waitFor(t, "the fixed file applied", applied("default/web", agent.Replaced, 1))
		})
	}
}

func TestIgnoredFiles(t *testing.T) {
	h := newHarness(t)
	h.start()
	for _, name := range []string{".hidden.yaml", "web.yaml~", "web.yaml.swp", ".web.yaml.swp", "notes.txt", "web.yaml.bak", "#web.yaml#"} {
		h.write(name, pod(strings.NewReplacer(".", "", "~", "", "#", "").Replace(strings.ToLower(name)), "nginx:1"))
	}
	if err := os.Mkdir(h.path("sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.write(filepath.Join("sub.yaml", "inner.yaml"), pod("inner", "nginx:1"))
	h.write("real.YML", pod("real", "nginx:1"))
	h.fake.waitFor(t, "the manifest applied", applied("default/real", agent.Created, 1))
	h.sync()
	calls, reports := h.fake.snapshot()
	for _, c := range calls {
		if c.key != "default/real" {
			t.Errorf("an ignored file was applied: %s", describe(calls))
			break
		}
	}
	if len(reports) != 0 {
		t.Errorf("an ignored file was reported: %v", reports)
	}
}

func TestStartupReconcilesAnnotatedPods(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kept := h.path("kept.yaml")
	h.write("kept.yaml", pod("kept", "nginx:1"))
	// What the agent knows after a restart.
	h.fake.seed(decoded(t, pod("kept", "nginx:1"), kept))
	h.fake.seed(decoded(t, pod("dropped", "nginx:1"), kept))
	h.fake.seed(decoded(t, pod("gone", "nginx:1"), h.path("gone.yaml")))
	h.fake.seed(decoded(t, pod("elsewhere", "nginx:1"), filepath.Join(t.TempDir(), "missing.yaml")))
	h.fake.seed(decoded(t, pod("api", "nginx:1"), ""))

	h.start()
	calls, reports := h.fake.snapshot()
	got := describe(calls)
	for _, want := range []string{"apply default/kept unchanged", "delete default/dropped", "delete default/gone", "delete default/elsewhere"} {
		if !strings.Contains(got, want) {
			t.Errorf("calls = %s, want %s", got, want)
		}
	}
	if strings.Contains(got, "default/api") || strings.Contains(got, "kept replaced") || strings.Contains(got, "delete default/kept") {
		t.Errorf("calls = %s: touched a pod it should not", got)
	}
	if len(reports) != 0 {
		t.Errorf("reports = %v", reports)
	}
}

func TestResyncHealsMissedChanges(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	h.fake.forget("default/web") // deleted behind the Source's back
	h.clk.Step(DefaultResyncPeriod)
	h.fake.waitFor(t, "web created again by the resync", applied("default/web", agent.Created, 2))
}

func TestNameConflicts(t *testing.T) {
	h := newHarness(t)
	h.fake.seed(decoded(t, pod("api", "nginx:1"), ""))
	h.start()
	h.write("a.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	h.write("b.yaml", pod("web", "nginx:2"))
	h.write("c.yaml", pod("api", "nginx:2"))
	h.fake.waitFor(t, "both conflicts reported", func(_ []call, reports []report) bool {
		return len(reportsFor(reports, h.path("b.yaml"))) == 1 && len(reportsFor(reports, h.path("c.yaml"))) == 1
	})
	_, reports := h.fake.snapshot()
	if got := reportsFor(reports, h.path("b.yaml"))[0].err.Error(); !strings.Contains(got, "already declared by "+h.path("a.yaml")) {
		t.Errorf("b.yaml reported %q", got)
	}
	if got := reportsFor(reports, h.path("c.yaml"))[0].err.Error(); !strings.Contains(got, "not created from a manifest file") {
		t.Errorf("c.yaml reported %q", got)
	}

	// A file renamed keeps its pods: the new name takes them over, the
	// old name's removal deletes nothing.
	if err := os.Rename(h.path("a.yaml"), h.path("d.yaml")); err != nil {
		t.Fatal(err)
	}
	h.fake.waitFor(t, "web taken over by d.yaml", applied("default/web", agent.Replaced, 1))
	h.clk.Step(DefaultSettleDelay)
	h.sync() // a.yaml is gone for good
	calls, _ := h.fake.snapshot()
	if n := count(calls, "delete", "default/web", 0); n != 0 {
		t.Errorf("web deleted after a rename: %s", describe(calls))
	}
	if got := calls[len(calls)-1].pod.Annotations[SourceAnnotation]; !strings.HasSuffix(got, "d.yaml") {
		t.Errorf("web comes from %q, want d.yaml", got)
	}
}

// A link made into the directory is only ever "created": it is read once
// the settle delay has passed.
func TestSymlinkCreated(t *testing.T) {
	h := newHarness(t)
	h.start()
	target := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(target, []byte(pod("web", "nginx:1")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, h.path("web.yaml")); err != nil {
		t.Fatal(err)
	}
	h.settleUntil("web.yaml", DefaultSettleDelay, "web created", applied("default/web", agent.Created, 1))
}

func TestDirectoryRemovedIsRecreated(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	h.fake.waitFor(t, "web deleted", deleted("default/web", 1))
	// The directory is back and watched.
	h.write("db.yaml", pod("db", "postgres:17"))
	h.fake.waitFor(t, "db created", applied("default/db", agent.Created, 1))
}

func TestMissingDirectoryIsCreated(t *testing.T) {
	h := newHarness(t)
	h.start()
	if info, err := os.Stat(h.dir); err != nil || !info.IsDir() || info.Mode().Perm() != 0o755 {
		t.Fatalf("manifest directory: %v %v", info, err)
	}
}

func TestIsManifestName(t *testing.T) {
	for name, want := range map[string]bool{
		"web.yaml": true, "web.yml": true, "web.json": true, "WEB.YAML": true,
		".web.yaml": false, "web.yaml~": false, "web.yaml.swp": false, ".web.yaml.swp": false,
		"web": false, "web.txt": false, "4913": false, "#web.yaml#": false, "": false,
	} {
		if got := isManifestName(name); got != want {
			t.Errorf("isManifestName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A file put back while its old pod is still terminating is applied again
// once the old pod is gone: the agent finds the terminating pod unchanged.
func TestFileBackWhileItsPodTerminates(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web created", applied("default/web", agent.Created, 1))

	h.fake.setTerminating("default/web", true)
	h.write("web.yaml", pod("web", "nginx:1"))
	h.fake.waitFor(t, "web found terminating", applied("default/web", agent.Unchanged, 1))
	h.fake.setTerminating("default/web", false) // the old pod is gone
	h.settleUntil("web.yaml", retryDelay, "web created again", applied("default/web", agent.Created, 2))
}

func TestRunOnceAndSyncAfterStop(t *testing.T) {
	src := New(filepath.Join(t.TempDir(), "m"), newFakeAgent(), nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	syncCtx, stop := context.WithTimeout(context.Background(), waitTimeout)
	defer stop()
	if err := src.Sync(syncCtx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := src.Run(ctx); err == nil {
		t.Error("a second Run did not fail")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := src.Sync(syncCtx); !errors.Is(err, ErrStopped) {
		t.Errorf("Sync after Run returned: %v, want ErrStopped", err)
	}
}
