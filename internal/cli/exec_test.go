package cli

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExecContainer: the container an exec picks, as kubectl's podcmd
// (k8s.io/kubectl/pkg/cmd/util/podcmd): the one named, the annotation's,
// or the first with a note when there are others.
func TestExecContainer(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "setup"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "side"}},
		},
	}
	for _, tc := range []struct {
		name, container, annotation string
		want, warn, err             string
	}{
		{name: "named", container: "side", want: "side"},
		{name: "init named", container: "setup", want: "setup"},
		{name: "first", want: "app", warn: `Defaulted container "app" out of: app, side, setup (init)` + "\n"},
		{name: "annotation", annotation: "side", want: "side"},
		{name: "unknown", container: "nope", err: "container nope is not valid for pod web out of: app, side, setup (init)"},
		{name: "unknown annotation", annotation: "gone", want: "app", warn: `Default container name "gone" not found in pod web` + "\n" + `Defaulted container "app" out of: app, side, setup (init)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			if tc.annotation != "" {
				p.Annotations = map[string]string{defaultContainerAnnotation: tc.annotation}
			}
			var warn bytes.Buffer
			got, err := execContainer(p, tc.container, false, &warn)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("execContainer = %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || warn.String() != tc.warn {
				t.Errorf("execContainer = %q, %v, warned %q; want %q, %q", got, err, warn.String(), tc.want, tc.warn)
			}
		})
	}
}

// TestNamedPortsToNumbers: port-forward's ports as kubectl converts them
// (pkg/cmd/portforward, convertPodNamedPortToNumber).
func TestNamedPortsToNumbers(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	got, err := namedPortsToNumbers([]string{"80", "9000:80", ":80", "http", "1234:http", ":http"}, pod)
	if want := "80 9000:80 :80 8080 1234:8080 :8080"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("namedPortsToNumbers = %q, %v; want %q", got, err, want)
	}
	if _, err := namedPortsToNumbers([]string{"grpc"}, pod); err == nil || err.Error() != "Pod 'web' does not have a named port 'grpc'" {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := namedPortsToNumbers([]string{"80:"}, pod); err == nil || err.Error() != "remote port cannot be empty" {
		t.Errorf("an empty remote port: %v", err)
	}
}

// TestParseFileSpec: kubectl cp's file specifications.
func TestParseFileSpec(t *testing.T) {
	for arg, want := range map[string]fileSpec{
		"local/file":    {file: "local/file"},
		"web:/tmp/x":    {pod: "web", file: "/tmp/x"},
		"ns/web:/tmp/x": {namespace: "ns", pod: "web", file: "/tmp/x"},
	} {
		if got, err := parseFileSpec(arg); err != nil || got != want {
			t.Errorf("parseFileSpec(%q) = %+v, %v; want %+v", arg, got, err, want)
		}
	}
	for _, arg := range []string{":/tmp", "a/b/c:/tmp"} {
		if _, err := parseFileSpec(arg); err == nil {
			t.Errorf("parseFileSpec(%q) took it", arg)
		}
	}
	if err := checkCp(fileSpec{pod: "a", file: "x"}, fileSpec{pod: "b", file: "y"}); err == nil || err.Error() != "one of src or dest must be a local file specification" {
		t.Errorf("two pods: %v", err)
	}
	if err := checkCp(fileSpec{file: "x"}, fileSpec{file: "y"}); err == nil || err.Error() != "one of src or dest must be a remote file specification" {
		t.Errorf("two local files: %v", err)
	}
}

// TestUntar: what comes out of a container lands below the destination,
// the source's path stripped; a name that would escape it and a symbolic
// link are skipped with kubectl's warnings, and a name without the prefix
// is refused.
func TestUntar(t *testing.T) {
	tarOf := func(entries ...tar.Header) *bytes.Buffer {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range entries {
			h.Mode = 0o644
			body := "content of " + h.Name
			if h.Typeflag == tar.TypeReg {
				h.Size = int64(len(body))
			}
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg {
				_, _ = tw.Write([]byte(body))
			}
		}
		tw.Close()
		return &b
	}
	dest := filepath.Join(t.TempDir(), "out")
	var warn bytes.Buffer
	err := untar(&warn, tarOf(
		tar.Header{Name: "tmp/d/", Typeflag: tar.TypeDir},
		tar.Header{Name: "tmp/d/a.txt", Typeflag: tar.TypeReg},
		tar.Header{Name: "tmp/d/sub/b.txt", Typeflag: tar.TypeReg},
		tar.Header{Name: "tmp/d/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		tar.Header{Name: "tmp/d/../../../escape", Typeflag: tar.TypeReg},
	), "tmp/d", dest)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.txt": "content of tmp/d/a.txt", "sub/b.txt": "content of tmp/d/sub/b.txt"} {
		if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dest, "link")); err == nil {
		t.Errorf("the symbolic link was made")
	}
	if !strings.Contains(warn.String(), `warning: skipping symlink: "`+dest+`/link" -> "/etc/passwd"`) {
		t.Errorf("warnings: %q", warn.String())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "escape")); err == nil {
		t.Errorf("a name escaped the destination")
	}
	if err := untar(&warn, tarOf(tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg}), "tmp/d", dest); err == nil || err.Error() != "tar contents corrupted" {
		t.Errorf("a name without the prefix: %v", err)
	}
}
