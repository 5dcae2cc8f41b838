package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdMaxObjectBytes is etcd's default --max-request-bytes, 1.5 MiB: the
// largest object the Kubernetes API server can store.
const etcdMaxObjectBytes = 3 << 19

// MaxContainers is no stricter than Kubernetes: the smallest valid
// container a pod can store still takes so many bytes that no object etcd
// accepts holds more.
func TestMaxContainersHoldsEveryStorablePod(t *testing.T) {
	smallest := v1.Container{Name: "a", Image: "b", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullNever}
	enc, err := smallest.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// In PodSpec.containers, each container is framed by a tag and a
	// length: 2 bytes for one this small.
	inList := len(enc) + 2
	none, err := (&v1.PodSpec{}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	two, err := (&v1.PodSpec{Containers: []v1.Container{smallest, smallest}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(two)-len(none) != 2*inList {
		t.Fatalf("two smallest containers add %d bytes to a pod spec, want 2×%d", len(two)-len(none), inList)
	}
	if inList < 37 {
		t.Fatalf("the smallest container takes %d bytes of a pod, fewer than MaxContainers' doc says", inList)
	}
	// A defer container is JSON in an annotation: `{"name":"a","image":"b"}`
	// and a comma.
	deferJSON, err := json.Marshal(map[string]string{"name": "a", "image": "b"})
	if err != nil {
		t.Fatal(err)
	}
	perDefer := len(deferJSON) + 1
	defers := apivalidation.TotalAnnotationSizeLimitB / perDefer
	regular := (etcdMaxObjectBytes - defers*perDefer) / inList
	if most := defers + regular; most > MaxContainers || most != 45_910 {
		t.Fatalf("a 1.5 MiB pod holds up to %d containers (%d defer, %d others), MaxContainers is %d and its doc says 45,910", most, defers, regular, MaxContainers)
	}
}

// containerPod is a pod of so many init, regular and defer containers,
// all empty: the limit is checked before the containers are.
func containerPod(init, regular, deferred int) *Pod {
	p := &Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: "default"}}}
	p.Spec.InitContainers = make([]v1.Container, init)
	p.Spec.Containers = make([]v1.Container, regular)
	p.Defer = make([]v1.Container, deferred)
	return p
}

func TestValidateTooManyContainers(t *testing.T) {
	if v := (&validator{pod: containerPod(10_000, MaxContainers-20_000, 10_000)}); v.tooManyContainers() {
		t.Fatalf("a pod of MaxContainers containers: %s", FormatErrors(v.errs))
	}
	for name, p := range map[string]*Pod{
		"init":    containerPod(10_001, MaxContainers-20_000, 10_000),
		"regular": containerPod(0, MaxContainers+1, 0),
		"defer":   containerPod(0, 1, MaxContainers),
	} {
		got := FormatErrors(Validate(p))
		want := "spec.containers: Too many: 50001: must have at most 50000 containers, init and defer containers included"
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestReadManifest(t *testing.T) {
	full := bytes.Repeat([]byte("#"), MaxManifestBytes)
	got, err := ReadManifest(bytes.NewReader(full))
	if err != nil || len(got) != MaxManifestBytes {
		t.Fatalf("a manifest of MaxManifestBytes: %d bytes, %v", len(got), err)
	}
	_, err = ReadManifest(bytes.NewReader(append(full, '#')))
	if !errors.Is(err, ErrManifestTooLarge) || !strings.Contains(err.Error(), "more than 3 MiB (3145728 bytes)") {
		t.Fatalf("one byte more: %v, want ErrManifestTooLarge naming the limit", err)
	}
	// An endless input is read only to one byte past the limit.
	endless := &countingReader{}
	if _, err := ReadManifest(endless); !errors.Is(err, ErrManifestTooLarge) || endless.n != MaxManifestBytes+1 {
		t.Fatalf("endless input: %v after %d bytes, want ErrManifestTooLarge after %d", err, endless.n, MaxManifestBytes+1)
	}
}

// countingReader is an endless input of '#' that counts what was read.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	r.n += len(p)
	return len(p), nil
}

var _ io.Reader = (*countingReader)(nil)
