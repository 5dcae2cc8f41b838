package model

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// manifestSeeds are the manifests of testdata/valid and testdata/invalid:
// every shape of pod the decoder's and validation's tests know.
func manifestSeeds(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, data)
		}
	}
	if len(seeds) == 0 {
		f.Fatal("no manifests in testdata")
	}
	return seeds
}

// copyPod is a deep copy of p, its defer containers included.
func copyPod(p *Pod) *Pod {
	out := &Pod{Pod: p.Pod.DeepCopy()}
	for i := range p.Defer {
		out.Defer = append(out.Defer, *p.Defer[i].DeepCopy())
	}
	return out
}

// FuzzDecode feeds the manifest decoder anything. Decode either fails with
// ErrInvalidManifest and no pods, or returns pods that are defaulted
// (Default changes nothing more), that Validate can check, and that decode
// again, as podward serves and stores them (JSON, defer containers in their
// annotation), to the same pod with the same verdict.
func FuzzDecode(f *testing.F) {
	for _, seed := range manifestSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) || pods != nil {
				t.Fatalf("Decode = %d pods, %v; want no pods and ErrInvalidManifest", len(pods), err)
			}
			return
		}
		if len(pods) == 0 {
			t.Fatal("Decode returned no pods and no error")
		}
		for _, p := range pods {
			again := copyPod(p)
			Default(again)
			if !apiequality.Semantic.DeepEqual(p, again) {
				t.Fatalf("Default changed a decoded pod:\n%s", diffPods(t, p, again))
			}
			problems := Validate(p)
			if !apiequality.Semantic.DeepEqual(p, again) {
				t.Fatal("Validate changed the pod")
			}

			js, err := json.Marshal(p.Pod)
			if err != nil {
				t.Fatalf("marshal a decoded pod: %v", err)
			}
			back, err := Decode(js)
			if err != nil || len(back) != 1 {
				t.Fatalf("the decoded pod, as JSON, does not decode: %d pods, %v\n%s", len(back), err, js)
			}
			if !apiequality.Semantic.DeepEqual(normalized(p), normalized(back[0])) {
				t.Fatalf("the decoded pod changed through JSON:\n%s", diffPods(t, p, back[0]))
			}
			if got := Validate(back[0]); (len(got) == 0) != (len(problems) == 0) {
				t.Fatalf("Validate = %v before JSON, %v after", problems, got)
			}
		}
	})
}

// normalized is p as JSON keeps it: metav1.Time has whole seconds on the
// wire (apimachinery's encoding, not podward's).
func normalized(p *Pod) *Pod {
	out := copyPod(p)
	if ts := &out.CreationTimestamp; !ts.IsZero() {
		ts.Time = ts.Truncate(1e9)
	}
	if ts := out.DeletionTimestamp; ts != nil {
		ts.Time = ts.Truncate(1e9)
	}
	return out
}

func diffPods(t *testing.T, a, b *Pod) string {
	t.Helper()
	ja, _ := json.Marshal(struct {
		*v1.Pod
		Defer []v1.Container `json:"defer"`
	}{a.Pod, a.Defer})
	jb, _ := json.Marshal(struct {
		*v1.Pod
		Defer []v1.Container `json:"defer"`
	}{b.Pod, b.Defer})
	return "before: " + string(ja) + "\nafter:  " + string(jb)
}

// deferPod is a valid pod whose defer-containers annotation is raw.
func deferPod(raw string) []byte {
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]string{DeferContainersAnnotation: raw},
		},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "busybox"}},
		},
	}
	js, err := json.Marshal(pod)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return js
}

// FuzzDeferContainersAnnotation feeds the defer-containers annotation of an
// otherwise valid pod anything. Decode either refuses it, naming the
// annotation, or reads containers that FromV1 (the lenient reading of a
// pod podward stored) reads alike from the same annotation, and that
// Validate can check.
func FuzzDeferContainersAnnotation(f *testing.F) {
	for _, seed := range manifestSeeds(f) {
		var m struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(seed, &m) == nil {
			if raw, ok := m.Metadata.Annotations[DeferContainersAnnotation]; ok {
				f.Add(raw)
			}
		}
	}
	f.Add(`[]`)
	f.Add(`null`)
	f.Add(`[{"name":"a","image":"b","restartPolicy":"Always"}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		// A manifest, JSON or YAML, carries text: what the annotation can be.
		raw = strings.ToValidUTF8(raw, "\uFFFD")
		pods, err := Decode(deferPod(raw))
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("Decode = %v, want ErrInvalidManifest", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.Contains(line, DeferContainersAnnotation) {
					t.Fatalf("a problem that does not name the annotation: %q", line)
				}
			}
			return
		}
		if len(pods) != 1 {
			t.Fatalf("Decode = %d pods, want 1", len(pods))
		}
		p := pods[0]
		if got := p.Annotations[DeferContainersAnnotation]; got != raw {
			t.Fatalf("the annotation changed: %q, want %q", got, raw)
		}
		stored, err := FromV1(p.Pod.DeepCopy())
		if err != nil {
			t.Fatalf("FromV1 refuses what Decode accepted: %v", err)
		}
		Default(stored)
		if !apiequality.Semantic.DeepEqual(stored.Defer, p.Defer) {
			t.Fatalf("FromV1 reads other defer containers:\n%s", diffPods(t, p, stored))
		}
		for _, ref := range p.Containers() {
			if p.Container(ref) == nil {
				t.Fatalf("container %v of Containers() not found", ref)
			}
		}
		_ = Validate(p)
	})
}
