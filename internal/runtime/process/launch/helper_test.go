package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// helperMarkEnv names a file that this binary, run as the init helper,
// creates first: a test's proof that its process went through the helper.
const helperMarkEnv = "LAUNCH_TEST_HELPER_MARK"

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(HelperEnv); ok {
		if mark := os.Getenv(helperMarkEnv); mark != "" {
			_ = os.WriteFile(mark, nil, 0o644)
		}
	}
	MaybeRunHelper()
	os.Exit(m.Run())
}

// The init helper mounts a subPath as it opens it, refusing symlinks: one
// that a container swapped for a symlink to outside after the runtime
// checked it fails the start, and nothing of outside is mounted.
func TestHelperMountsTheSubPathItOpened(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	vol, outside, target := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(vol, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "inside", "secret"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Checked as a directory, then swapped.
	if err := os.Symlink(outside, filepath.Join(vol, "swapped")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sub, want, wantErr string
	}{
		{sub: "inside", want: "inside"},
		{sub: "swapped", wantErr: "open subPath " + filepath.Join(vol, "swapped")},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			spec := Spec{
				Argv:   []string{"cat", filepath.Join(target, "secret")},
				Env:    []string{"PATH=/usr/bin:/bin"},
				Dir:    "/",
				Mounts: []Mount{{Source: vol, SubPath: tc.sub, Target: target}},
			}
			cmd, err := Start(context.Background(), spec, out, out)
			if tc.wantErr != "" {
				if err == nil {
					_ = cmd.Wait()
					b, _ := os.ReadFile(out.Name())
					t.Fatalf("started, printing %q; want %q", b, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Start = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(out.Name()); err != nil || string(b) != tc.want {
				t.Fatalf("output %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}
