package podspec

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

func testPod() *model.Pod {
	return &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "node-1"},
	}}
}

func fieldRef(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
}

func TestEnv(t *testing.T) {
	addrs := Addresses{HostIP: "10.0.0.1", PodIP: "10.1.0.7", PodIPs: []string{"10.1.0.7", "fd00::7"}}
	tests := map[string]struct {
		env     []v1.EnvVar
		envFrom []v1.EnvFromSource
		want    []EnvVar
		wantErr string // "" for no error
	}{
		"none": {want: []EnvVar{}},
		"spec order": {
			env:  []v1.EnvVar{{Name: "B", Value: "1"}, {Name: "A", Value: "2"}},
			want: []EnvVar{{"B", "1"}, {"A", "2"}},
		},
		"a later duplicate replaces the value in place": {
			env:  []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "3"}},
			want: []EnvVar{{"A", "3"}, {"B", "2"}},
		},
		"references to earlier variables only": {
			env: []v1.EnvVar{
				{Name: "A", Value: "hello"},
				{Name: "B", Value: "$(A)-world"},
				{Name: "C", Value: "$$(A)"},
				{Name: "D", Value: "$(E)"},
				{Name: "E", Value: "late"},
			},
			want: []EnvVar{{"A", "hello"}, {"B", "hello-world"}, {"C", "$(A)"}, {"D", "$(E)"}, {"E", "late"}},
		},
		"a reference sees the latest value": {
			env:  []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}, {Name: "B", Value: "$(A)"}},
			want: []EnvVar{{"A", "2"}, {"B", "2"}},
		},
		"fieldRefs": {
			env: []v1.EnvVar{
				{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
				{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
				{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
				{Name: "HOST_IP", ValueFrom: fieldRef("status.hostIP")},
				{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
				// All of them, joined by commas, as the kubelet gives them.
				{Name: "POD_IPS", ValueFrom: fieldRef("status.podIPs")},
				{Name: "REF", Value: "$(NAME).$(NS)"},
			},
			want: []EnvVar{
				{"NAME", "web"}, {"NS", "default"}, {"UID", "uid-1"}, {"NODE", "node-1"}, {"APP", "web"},
				{"HOST_IP", "10.0.0.1"}, {"POD_IP", "10.1.0.7"}, {"POD_IPS", "10.1.0.7,fd00::7"}, {"REF", "web.default"},
			},
		},
		"fileKeyRef": {
			env:     []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}},
			wantErr: "spec.containers[0].env[0].valueFrom.fileKeyRef: Unsupported value: podward does not read environment variables from files",
		},
		"unknown fieldPath": {
			env:     []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("status.phase")}},
			wantErr: `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase" is not supported by podward`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", Env: tc.env, EnvFrom: tc.envFrom}
			env, vars, err := Env(context.Background(), testPod(), c, "spec.containers[0]", EnvSources{Addresses: addrs})
			if tc.wantErr != "" {
				if !errors.Is(err, runtime.ErrUnsupported) || err.Error() != tc.wantErr {
					t.Fatalf("Env = %v, want ErrUnsupported %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Env = %v", err)
			}
			if !slices.Equal(env, tc.want) {
				t.Errorf("env = %v, want %v", env, tc.want)
			}
			// vars are the same variables, by name.
			want := Vars{}
			for _, e := range tc.want {
				want[e.Name] = e.Value
			}
			if !maps.Equal(vars, want) {
				t.Errorf("vars = %v, want %v", vars, want)
			}
		})
	}
}
