package model

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultPullPolicy(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := map[string]struct {
		image string
		want  v1.PullPolicy
	}{
		"no tag":                         {image: "nginx", want: v1.PullAlways},
		"latest":                         {image: "nginx:latest", want: v1.PullAlways},
		"tag":                            {image: "nginx:1.27", want: v1.PullIfNotPresent},
		"digest":                         {image: "nginx" + digest, want: v1.PullIfNotPresent},
		"latest and digest":              {image: "nginx:latest" + digest, want: v1.PullAlways},
		"tag and digest":                 {image: "nginx:1.27" + digest, want: v1.PullIfNotPresent},
		"registry port, no tag":          {image: "registry.example:5000/team/app", want: v1.PullAlways},
		"registry port and tag":          {image: "registry.example:5000/team/app:v2", want: v1.PullIfNotPresent},
		"registry port and latest":       {image: "registry.example:5000/team/app:latest", want: v1.PullAlways},
		"empty image (Validate reports)": {image: "", want: v1.PullIfNotPresent},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := defaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("defaultPullPolicy(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestDefaultIsIdempotent(t *testing.T) {
	pods, err := Decode([]byte(podYAML))
	if err != nil {
		t.Fatal(err)
	}
	once := pods[0]
	twice := &Pod{Pod: once.DeepCopy(), Defer: append([]v1.Container(nil), once.Defer...)}
	for i := range twice.Defer {
		twice.Defer[i] = *once.Defer[i].DeepCopy()
	}
	Default(twice)
	if !equality.Semantic.DeepEqual(once.Pod, twice.Pod) || !equality.Semantic.DeepEqual(once.Defer, twice.Defer) {
		t.Errorf("second Default changed the pod:\nonce:  %+v\ntwice: %+v", once, twice)
	}
}

func TestDefaultNil(t *testing.T) {
	Default(nil)
	Default(&Pod{})
	p := &Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}
	Default(p)
	if p.Namespace != "default" {
		t.Errorf("namespace = %q, want default", p.Namespace)
	}
}
