package podspec

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
)

func testObjects() *objectstest.Objects {
	o := &objectstest.Objects{}
	o.Put(
		&v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
			Data:       map[string]string{"mode": "fast", "level": "3"},
			BinaryData: map[string][]byte{"blob": {1}},
		},
		&v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "odd"},
			Data:       map[string]string{"ok": "1", "bad=key": "x", "tab\tkey": "y"},
		},
		&v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
			Data:       map[string][]byte{"user": []byte("admin"), "pw": []byte("s3cret")},
		},
		// Another namespace's objects are never read.
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "theirs"}, Data: map[string]string{"k": "v"}},
	)
	return o
}

func yes() *bool { b := true; return &b }

func cmRef(name string) *v1.ConfigMapEnvSource {
	return &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}
}

func secretRef(name string) *v1.SecretEnvSource {
	return &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}
}

func cmKey(name, key string, optional *bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

func secretKey(name, key string, optional *bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

// Env reads envFrom, configMapKeyRef and secretKeyRef as the kubelet does:
// envFrom first, then env; missing optional ones leave their variables
// out; missing required ones are ContainerConfigErrors with the kubelet's
// messages.
func TestEnvObjects(t *testing.T) {
	tests := map[string]struct {
		env     []v1.EnvVar
		envFrom []v1.EnvFromSource
		want    []EnvVar
		wantErr string // a ContainerConfigError's message
	}{
		"envFrom a ConfigMap, its keys sorted, data only": {
			envFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg")}},
			want:    []EnvVar{{"level", "3"}, {"mode", "fast"}},
		},
		"envFrom with a prefix": {
			envFrom: []v1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: cmRef("cfg")}},
			want:    []EnvVar{{"APP_level", "3"}, {"APP_mode", "fast"}},
		},
		"envFrom a Secret": {
			envFrom: []v1.EnvFromSource{{SecretRef: secretRef("creds")}},
			want:    []EnvVar{{"pw", "s3cret"}, {"user", "admin"}},
		},
		"a later source and env replace in place; env sees envFrom": {
			envFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg")}, {Prefix: "le", SecretRef: secretRef("creds")}},
			env:     []v1.EnvVar{{Name: "mode", Value: "slow-$(level)"}, {Name: "X", Value: "$(user)"}},
			want:    []EnvVar{{"level", "3"}, {"mode", "slow-3"}, {"lepw", "s3cret"}, {"leuser", "admin"}, {"X", "$(user)"}},
		},
		"missing ConfigMap": {
			envFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("nope")}},
			wantErr: `configmap "nope" not found`,
		},
		"missing Secret": {
			envFrom: []v1.EnvFromSource{{SecretRef: secretRef("nope")}},
			wantErr: `secret "nope" not found`,
		},
		"another namespace's ConfigMap is missing": {
			envFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("theirs")}},
			wantErr: `configmap "theirs" not found`,
		},
		"missing optional envFrom": {
			envFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: yes()}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: yes()}},
			},
			env:  []v1.EnvVar{{Name: "A", Value: "1"}},
			want: []EnvVar{{"A", "1"}},
		},
		"keyRefs": {
			env:  []v1.EnvVar{{Name: "MODE", ValueFrom: cmKey("cfg", "mode", nil)}, {Name: "PW", ValueFrom: secretKey("creds", "pw", nil)}},
			want: []EnvVar{{"MODE", "fast"}, {"PW", "s3cret"}},
		},
		"a keyRef's value is not expanded": {
			env:  []v1.EnvVar{{Name: "level", Value: "x"}, {Name: "M", ValueFrom: cmKey("odd", "ok", nil)}},
			want: []EnvVar{{"level", "x"}, {"M", "1"}},
		},
		"missing key of a ConfigMap": {
			env:     []v1.EnvVar{{Name: "B", ValueFrom: cmKey("cfg", "blob", nil)}},
			wantErr: "couldn't find key blob in ConfigMap default/cfg",
		},
		"missing key of a Secret": {
			env:     []v1.EnvVar{{Name: "B", ValueFrom: secretKey("creds", "token", nil)}},
			wantErr: "couldn't find key token in Secret default/creds",
		},
		"missing object of a keyRef": {
			env:     []v1.EnvVar{{Name: "B", ValueFrom: secretKey("nope", "token", nil)}},
			wantErr: `secret "nope" not found`,
		},
		"optional keyRefs leave their variable out, even one set before": {
			env: []v1.EnvVar{
				{Name: "A", Value: "kept"},
				{Name: "A", ValueFrom: cmKey("cfg", "nokey", yes())},
				{Name: "B", ValueFrom: cmKey("nope", "k", yes())},
				{Name: "C", ValueFrom: secretKey("creds", "nokey", yes())},
				{Name: "D", ValueFrom: secretKey("nope", "k", yes())},
			},
			want: []EnvVar{{"A", "kept"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", Env: tc.env, EnvFrom: tc.envFrom}
			env, vars, err := Env(context.Background(), testPod(), c, "spec.containers[0]", EnvSources{Objects: testObjects()})
			if tc.wantErr != "" {
				var ce *runtime.ContainerConfigError
				if !errors.As(err, &ce) || !errors.Is(err, runtime.ErrContainerConfig) || ce.Message != tc.wantErr || err.Error() != tc.wantErr {
					t.Fatalf("Env = %v, want a ContainerConfigError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Env = %v", err)
			}
			if !slices.Equal(env, tc.want) {
				t.Errorf("env = %v, want %v", env, tc.want)
			}
			if len(vars) != len(tc.want) {
				t.Errorf("vars = %v, want the %d variables of env", vars, len(tc.want))
			}
		})
	}
}

// A missing object's error keeps the Getter's NotFound as its cause; with
// no Getter at all every object is missing.
func TestEnvNoGetter(t *testing.T) {
	c := &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg")}}}
	_, _, err := Env(context.Background(), testPod(), c, "spec.containers[0]", EnvSources{})
	if !errors.Is(err, runtime.ErrContainerConfig) || !apierrors.IsNotFound(err) || err.Error() != `configmap "cfg" not found` {
		t.Fatalf("Env = %v, want a ContainerConfigError wrapping NotFound", err)
	}
}

// Keys that are no variable names under the relaxed rule (any printable
// ASCII but '=') are skipped, named in one warning per source, the
// kubelet's event.
func TestEnvInvalidKeys(t *testing.T) {
	var warnings []string
	src := EnvSources{Objects: testObjects(), Warn: func(reason, msg string) {
		if reason != ReasonInvalidEnvNames {
			t.Errorf("reason %q", reason)
		}
		warnings = append(warnings, msg)
	}}
	c := &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{Prefix: "1-", ConfigMapRef: cmRef("odd")}, {SecretRef: secretRef("creds")}}}
	env, _, err := Env(context.Background(), testPod(), c, "spec.containers[0]", src)
	if err != nil {
		t.Fatal(err)
	}
	// "1-ok" is a name under the relaxed rule (not under the old C-like one).
	if want := []EnvVar{{"1-ok", "1"}, {"pw", "s3cret"}, {"user", "admin"}}; !slices.Equal(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	want := []string{"Keys [1-bad=key, 1-tab\tkey] from the EnvFrom configMap default/odd were skipped since they are considered invalid environment variable names."}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}
}

func resourceRef(res, divisor string) *v1.EnvVarSource {
	ref := &v1.ResourceFieldSelector{Resource: res}
	if divisor != "" {
		ref.Divisor = resource.MustParse(divisor)
	}
	return &v1.EnvVarSource{ResourceFieldRef: ref}
}

// resourceFieldRef: limits and requests, divided by the divisor and
// rounded up; a missing limit is the pod-level limit, else the node's
// allocatable.
func TestEnvResourceFieldRef(t *testing.T) {
	alloc := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	res := v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1250m"), v1.ResourceMemory: resource.MustParse("64Mi"),
			"hugepages-2Mi": resource.MustParse("4Mi")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1000")},
	}
	tests := map[string]struct {
		res      v1.ResourceRequirements
		podLimit v1.ResourceList
		ref      *v1.EnvVarSource
		want     string
	}{
		"cpu limit rounds up to cores":         {res: res, ref: resourceRef("limits.cpu", ""), want: "2"},
		"cpu limit in millicores":              {res: res, ref: resourceRef("limits.cpu", "1m"), want: "1250"},
		"cpu request rounds up":                {res: res, ref: resourceRef("requests.cpu", ""), want: "1"},
		"cpu request over 100m":                {res: res, ref: resourceRef("requests.cpu", "100m"), want: "3"},
		"memory limit in bytes":                {res: res, ref: resourceRef("limits.memory", ""), want: "67108864"},
		"memory limit in Mi":                   {res: res, ref: resourceRef("limits.memory", "1Mi"), want: "64"},
		"memory request rounds up":             {res: res, ref: resourceRef("requests.memory", "1Ki"), want: "1"},
		"hugepages limit":                      {res: res, ref: resourceRef("limits.hugepages-2Mi", "1Mi"), want: "4"},
		"no ephemeral-storage limit":           {res: res, ref: resourceRef("limits.ephemeral-storage", "1Gi"), want: "100"},
		"no cpu limit: allocatable":            {ref: resourceRef("limits.cpu", ""), want: "4"},
		"no memory limit: allocatable":         {ref: resourceRef("limits.memory", "1Gi"), want: "8"},
		"no request: 0":                        {ref: resourceRef("requests.memory", ""), want: "0"},
		"no hugepages limit: 0, not defaulted": {ref: resourceRef("limits.hugepages-2Mi", ""), want: "0"},
		"no cpu limit: the pod-level limit": {
			podLimit: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")},
			ref:      resourceRef("limits.cpu", ""), want: "2",
		},
		"a pod-level limit does not stand in for ephemeral-storage": {
			podLimit: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
			ref:      resourceRef("limits.ephemeral-storage", "1Gi"), want: "100",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			if tc.podLimit != nil {
				pod.Spec.Resources = &v1.ResourceRequirements{Limits: tc.podLimit}
			}
			c := v1.Container{Name: "app", Resources: tc.res, Env: []v1.EnvVar{{Name: "R", ValueFrom: tc.ref}}}
			pod.Spec.Containers = []v1.Container{c}
			env, _, err := Env(context.Background(), pod, &pod.Spec.Containers[0], "spec.containers[0]", EnvSources{Allocatable: alloc})
			if err != nil {
				t.Fatal(err)
			}
			if want := []EnvVar{{"R", tc.want}}; !slices.Equal(env, want) {
				t.Errorf("env = %v, want %v", env, want)
			}
		})
	}
}

// A resourceFieldRef may name another container of the pod.
func TestEnvResourceFieldRefOtherContainer(t *testing.T) {
	pod := testPod()
	ref := &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}
	pod.Spec.Containers = []v1.Container{
		{Name: "app", Env: []v1.EnvVar{{Name: "M", ValueFrom: ref}}},
		{Name: "side", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}}},
	}
	env, _, err := Env(context.Background(), pod, &pod.Spec.Containers[0], "spec.containers[0]", EnvSources{})
	if err != nil || !slices.Equal(env, []EnvVar{{"M", "32"}}) {
		t.Fatalf("Env = %v, %v; want M=32", env, err)
	}
}

// Every fieldRef path the kubelet resolves.
func TestEnvFieldRefs(t *testing.T) {
	pod := testPod()
	pod.Annotations = map[string]string{"note": "hi"}
	pod.Spec.ServiceAccountName = "robot"
	var env []v1.EnvVar
	for _, p := range []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels['app']",
		"metadata.annotations['note']", "metadata.labels['none']", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"} {
		env = append(env, v1.EnvVar{Name: "V" + string(rune('A'+len(env))), ValueFrom: fieldRef(p)})
	}
	c := &v1.Container{Name: "app", Env: env}
	got, _, err := Env(context.Background(), pod, c, "spec.containers[0]", EnvSources{Addresses: Addresses{HostIP: "10.0.0.1", PodIP: "10.1.0.7"}})
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, e := range got {
		values = append(values, e.Value)
	}
	want := []string{"web", "default", "uid-1", "web", "hi", "", "node-1", "robot", "10.0.0.1", "10.0.0.1", "10.1.0.7", "10.1.0.7"}
	if !slices.Equal(values, want) {
		t.Errorf("values = %q, want %q", values, want)
	}
}

// CheckContainer reads no object: a pod whose env needs objects that do
// not exist passes it (the container waits at its start instead).
func TestCheckContainerReadsNoObjects(t *testing.T) {
	c := v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("nope")}},
		Env: []v1.EnvVar{{Name: "A", ValueFrom: secretKey("nope", "k", nil)}, {Name: "B", ValueFrom: resourceRef("limits.cpu", "")}}}
	pod := &model.Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}}
	if err := CheckContainer(pod, model.ContainerRef{Name: "app", Role: model.RoleMain}, &c); err != nil {
		t.Fatalf("CheckContainer = %v", err)
	}
}

// ctxGetter fails every read with its context's error, as a cluster's
// first read that ctx cut short does.
type ctxGetter struct{}

func (ctxGetter) ConfigMap(ctx context.Context, _, _ string) (*v1.ConfigMap, error) {
	return nil, ctx.Err()
}

func (ctxGetter) Secret(ctx context.Context, _, _ string) (*v1.Secret, error) { return nil, ctx.Err() }

// A read that ctx ended is ctx's error, not a configuration error: the
// start was cancelled, the container does not wait on its configuration.
func TestEnvContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg")}}}
	_, _, err := Env(ctx, testPod(), c, "spec.containers[0]", EnvSources{Objects: ctxGetter{}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrContainerConfig) {
		t.Fatalf("Env = %v, want context.Canceled alone", err)
	}
}
