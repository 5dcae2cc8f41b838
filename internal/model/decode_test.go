package model

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const podYAML = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name": "flush", "image": "busybox:1.36", "command": ["sync"]}]'
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports:
    - containerPort: 80
    resources:
      limits:
        cpu: 500m
`

const podJSON = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "web",
    "namespace": "shop",
    "annotations": {
      "pod.alpha.kubernetes.io/defer-containers": "[{\"name\": \"flush\", \"image\": \"busybox:1.36\", \"command\": [\"sync\"]}]"
    }
  },
  "spec": {
    "containers": [
      {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {"limits": {"cpu": "500m"}}}
    ]
  }
}`

func decodeOne(t *testing.T, manifest string) *Pod {
	t.Helper()
	pods, err := Decode([]byte(manifest))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(pods) != 1 {
		t.Fatalf("Decode returned %d pods, want 1", len(pods))
	}
	return pods[0]
}

func TestDecodeYAMLAndJSONAgree(t *testing.T) {
	fromYAML := decodeOne(t, podYAML)
	fromJSON := decodeOne(t, podJSON)
	if !equality.Semantic.DeepEqual(fromYAML.Pod, fromJSON.Pod) {
		t.Errorf("pods differ:\nYAML: %+v\nJSON: %+v", fromYAML.Pod, fromJSON.Pod)
	}
	if !equality.Semantic.DeepEqual(fromYAML.Defer, fromJSON.Defer) {
		t.Errorf("defer containers differ:\nYAML: %+v\nJSON: %+v", fromYAML.Defer, fromJSON.Defer)
	}
	if fromYAML.Key() != "shop/web" || len(fromYAML.Defer) != 1 {
		t.Errorf("got %s with %d defer containers, want shop/web with 1", fromYAML.Key(), len(fromYAML.Defer))
	}
}

func podNamed(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: app\n    image: alpine\n"
}

func podJSONNamed(name string) string {
	return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "` + name + `"}, "spec": {"containers": [{"name": "app", "image": "alpine"}]}}`
}

func TestDecodeMultipleDocuments(t *testing.T) {
	tests := map[string]struct {
		input string
		want  []string
	}{
		"one YAML document": {
			input: podNamed("a"),
			want:  []string{"a"},
		},
		"YAML documents with empty ones between": {
			input: "---\n# comment only\n---\n" + podNamed("a") + "---\n\n---\n" + podNamed("b") + "--- # trailing\n",
			want:  []string{"a", "b"},
		},
		"one JSON object": {
			input: podJSONNamed("a"),
			want:  []string{"a"},
		},
		"JSON stream": {
			input: podJSONNamed("a") + "\n" + podJSONNamed("b") + podJSONNamed("c"),
			want:  []string{"a", "b", "c"},
		},
		"JSON inside YAML documents": {
			input: podNamed("a") + "---\n" + podJSONNamed("b") + "\n",
			want:  []string{"a", "b"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pods, err := Decode([]byte(tt.input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pods = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := map[string]struct {
		input string
		want  []string
		noPod bool // the error also matches ErrNoPods
	}{
		"unknown top-level field": {
			input: podNamed("a") + "specs: {}\n",
			want:  []string{"specs: unknown field"},
		},
		"unknown fields are all reported": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labelz: {}\nspec:\n  containers:\n  - name: app\n    imagee: alpine\n    ports:\n    - containerPort: 80\n      porotocol: TCP\n",
			want: []string{
				"metadata.labelz: unknown field",
				"spec.containers[0].imagee: unknown field",
				"spec.containers[0].ports[0].porotocol: unknown field",
			},
		},
		"unknown field in JSON": {
			input: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "app", "image": "alpine", "tty": true, "ttyy": true}]}}`,
			want:  []string{"spec.containers[0].ttyy: unknown field"},
		},
		"field names are case-sensitive": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  Name: a\nspec:\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.Name: unknown field"},
		},
		"duplicate field in JSON": {
			input: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "name": "b"}, "spec": {"containers": [{"name": "app", "image": "alpine"}]}}`,
			want:  []string{"metadata.name: duplicate field"},
		},
		"duplicate key in YAML": {
			input: "apiVersion: v1\nkind: Pod\nkind: Pod\n",
			want:  []string{`yaml: unmarshal errors: line 3: key "kind" already set in map`},
		},
		"wrong type": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: app\n    image: alpine\n    ports:\n    - containerPort: http\n",
			want:  []string{"json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"},
		},
		"wrong kind": {
			input: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n",
			want:  []string{`kind "Deployment" is not supported: podward runs Pods, ConfigMaps and Secrets`},
		},
		"wrong kind in the second document": {
			input: podNamed("a") + "---\napiVersion: batch/v1\nkind: Job\n",
			want:  []string{`document 2: kind "Job" is not supported: podward runs Pods, ConfigMaps and Secrets`},
		},
		"document numbers skip empty documents": {
			input: "---\n---\n" + podNamed("a") + "---\n# nothing\n---\n" + podNamed("b") + "  bogus: 1\n",
			want:  []string{"document 2: spec.bogus: unknown field"},
		},
		"wrong apiVersion": {
			input: "apiVersion: v2\nkind: Pod\nmetadata:\n  name: a\n",
			want:  []string{`apiVersion "v2" is not supported: a Pod is "apiVersion: v1"`},
		},
		"missing apiVersion": {
			input: "kind: Pod\nmetadata:\n  name: a\n",
			want:  []string{`apiVersion is missing: a Pod is "apiVersion: v1"`},
		},
		"missing kind": {
			input: "apiVersion: v1\nmetadata:\n  name: a\n",
			want:  []string{`kind is missing: podward runs Pods, ConfigMaps and Secrets (want "kind: Pod")`},
		},
		"a list, not an object": {
			input: "- apiVersion: v1\n  kind: Pod\n",
			want:  []string{"expected an object, got a list"},
		},
		"YAML syntax error": {
			input: "apiVersion: v1\nkind: Pod\nmetadata: [\n",
			want:  []string{"yaml: line 3: did not find expected node content"},
		},
		"JSON syntax error": {
			input: podJSONNamed("a") + "\n{\"apiVersion\": ",
			want:  []string{"invalid JSON after 1 document(s): unexpected EOF"},
		},
		"unknown field in spec": {
			input: podNamed("a") + "  x: 1\n",
			want:  []string{"spec.x: unknown field"},
		},
		"defer annotation is not a list": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    pod.alpha.kubernetes.io/defer-containers: 'upload'\nspec:\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.annotations[pod.alpha.kubernetes.io/defer-containers]: invalid JSON list of containers: invalid character 'u' looking for beginning of value"},
		},
		"unknown field in a defer container": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    pod.alpha.kubernetes.io/defer-containers: '[{\"name\": \"u\", \"image\": \"curl\", \"lifecycle\": {\"preStopp\": {}}}]'\nspec:\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].lifecycle.preStopp: unknown field"},
		},
		"bad JSON in the legacy init annotation": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    pod.beta.kubernetes.io/init-containers: '[{\"name\": \"init\"'\nspec:\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.annotations[pod.beta.kubernetes.io/init-containers]: invalid JSON list of containers: unexpected end of JSON input"},
		},
		"unknown field in a legacy init container": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    pod.beta.kubernetes.io/init-containers: '[{\"name\": \"init\", \"imag\": \"busybox\"}]'\nspec:\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.annotations[pod.beta.kubernetes.io/init-containers][0].imag: unknown field"},
		},
		"legacy annotation and spec.initContainers": {
			input: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    pod.beta.kubernetes.io/init-containers: '[{\"name\": \"one\", \"image\": \"busybox\"}]'\nspec:\n  initContainers:\n  - name: two\n    image: busybox\n  containers:\n  - name: app\n    image: alpine\n",
			want:  []string{"metadata.annotations[pod.beta.kubernetes.io/init-containers]: may not be set together with spec.initContainers: move these init containers into spec.initContainers"},
		},
		"empty input": {
			input: "",
			want:  []string{"no pod manifest in input"},
			noPod: true,
		},
		"only comments and separators": {
			input: "# nothing here\n---\n---\n",
			want:  []string{"no pod manifest in input"},
			noPod: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pods, err := Decode([]byte(tt.input))
			if err == nil {
				t.Fatalf("Decode returned %d pods and no error", len(pods))
			}
			if pods != nil {
				t.Errorf("Decode returned pods along with an error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("error:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Errorf("error does not match ErrInvalidManifest")
			}
			if got := errors.Is(err, ErrNoPods); got != tt.noPod {
				t.Errorf("errors.Is(err, ErrNoPods) = %v, want %v", got, tt.noPod)
			}
		})
	}
}

func TestDecodeLegacyInitContainers(t *testing.T) {
	tests := map[string]struct {
		annotations     string
		wantAnnotations map[string]string
	}{
		"only annotation": {
			annotations: "    pod.beta.kubernetes.io/init-containers: '[{\"name\": \"fetch\", \"image\": \"busybox:1.36\"}, {\"name\": \"unpack\", \"image\": \"busybox\"}]'\n",
		},
		"other annotations are kept": {
			annotations:     "    owner: team-a\n    pod.beta.kubernetes.io/init-containers: '[{\"name\": \"fetch\", \"image\": \"busybox:1.36\"}, {\"name\": \"unpack\", \"image\": \"busybox\"}]'\n",
			wantAnnotations: map[string]string{"owner": "team-a"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := decodeOne(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: seed\n  annotations:\n"+tt.annotations+
				"spec:\n  containers:\n  - name: job\n    image: example.com/job:1\n")
			var names []string
			for _, c := range p.Spec.InitContainers {
				names = append(names, c.Name)
			}
			if want := []string{"fetch", "unpack"}; !slices.Equal(names, want) {
				t.Errorf("init containers = %v, want %v", names, want)
			}
			if !equality.Semantic.DeepEqual(p.Annotations, tt.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", p.Annotations, tt.wantAnnotations)
			}
			// Moved containers are defaulted like any other.
			if got := p.Spec.InitContainers[0].ImagePullPolicy; got != v1.PullIfNotPresent {
				t.Errorf("fetch imagePullPolicy = %q, want IfNotPresent", got)
			}
			if got := p.Spec.InitContainers[1].ImagePullPolicy; got != v1.PullAlways {
				t.Errorf("unpack imagePullPolicy = %q, want Always", got)
			}
			if errs := Validate(p); len(errs) > 0 {
				t.Errorf("Validate:\n%s", FormatErrors(errs))
			}
		})
	}
}

func TestDecodeDeferContainers(t *testing.T) {
	const annotation = `[
  {"name": "upload", "image": "curl:8", "command": ["upload"]},
  {"name": "notify", "image": "curl:8", "restartPolicy": "OnFailure", "env": [{"name": "TO", "value": "ops"}]}
]`
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: batch\n  annotations:\n    " + DeferContainersAnnotation + ": '" +
		strings.ReplaceAll(annotation, "\n", " ") + "'\nspec:\n  containers:\n  - name: job\n    image: example.com/job:1\n"
	p := decodeOne(t, manifest)

	if len(p.Defer) != 2 || p.Defer[0].Name != "upload" || p.Defer[1].Name != "notify" {
		t.Fatalf("defer containers = %+v, want upload then notify", p.Defer)
	}
	for _, c := range p.Defer {
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyOnFailure {
			t.Errorf("%s restartPolicy = %v, want OnFailure", c.Name, c.RestartPolicy)
		}
		if c.TerminationMessagePolicy != v1.TerminationMessageReadFile || c.ImagePullPolicy != v1.PullIfNotPresent {
			t.Errorf("%s not defaulted: %+v", c.Name, c)
		}
	}
	if got := p.Defer[1].Env; len(got) != 1 || got[0].Value != "ops" {
		t.Errorf("notify env = %+v", got)
	}
	if _, ok := p.Annotations[DeferContainersAnnotation]; !ok {
		t.Error("defer annotation was removed; it must stay on the pod")
	}
	if got := p.Container(ContainerRef{Name: "notify", Role: RoleDefer, Index: 1}); got == nil {
		t.Error("Container(notify) = nil")
	}
}

// TestDecodeAppliesDefaults checks, through Decode, the defaults the API
// server would apply.
func TestDecodeAppliesDefaults(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n" + spec
	}
	const container = "  containers:\n  - name: app\n    image: alpine:3.20\n"
	tests := map[string]struct {
		manifest string
		get      func(p *Pod) any
		want     any
	}{
		"namespace": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Namespace },
			want:     "default",
		},
		"namespace kept": {
			manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: shop\nspec:\n" + container,
			get:      func(p *Pod) any { return p.Namespace },
			want:     "shop",
		},
		"restartPolicy": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.RestartPolicy },
			want:     v1.RestartPolicyAlways,
		},
		"restartPolicy kept": {
			manifest: pod("  restartPolicy: Never\n" + container),
			get:      func(p *Pod) any { return p.Spec.RestartPolicy },
			want:     v1.RestartPolicyNever,
		},
		"terminationGracePeriodSeconds": {
			manifest: pod(container),
			get:      func(p *Pod) any { return *p.Spec.TerminationGracePeriodSeconds },
			want:     int64(30),
		},
		"terminationGracePeriodSeconds zero kept": {
			manifest: pod("  terminationGracePeriodSeconds: 0\n" + container),
			get:      func(p *Pod) any { return *p.Spec.TerminationGracePeriodSeconds },
			want:     int64(0),
		},
		"dnsPolicy": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.DNSPolicy },
			want:     v1.DNSClusterFirst,
		},
		"schedulerName": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.SchedulerName },
			want:     "default-scheduler",
		},
		// The ServiceAccount admission plugin names the namespace's default
		// service account (k8s.io/kubernetes plugin/pkg/admission/serviceaccount);
		// the API server writes the deprecated field alike.
		"serviceAccountName": {
			manifest: pod(container),
			get:      func(p *Pod) any { return [2]string{p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount} },
			want:     [2]string{"default", "default"},
		},
		"serviceAccountName kept": {
			manifest: pod("  serviceAccountName: builder\n" + container),
			get:      func(p *Pod) any { return [2]string{p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount} },
			want:     [2]string{"builder", "builder"},
		},
		"serviceAccountName from the deprecated serviceAccount": {
			manifest: pod("  serviceAccount: legacy\n" + container),
			get:      func(p *Pod) any { return [2]string{p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount} },
			want:     [2]string{"legacy", "legacy"},
		},
		"terminationMessagePath": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.Containers[0].TerminationMessagePath },
			want:     "/dev/termination-log",
		},
		"terminationMessagePolicy": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.Containers[0].TerminationMessagePolicy },
			want:     v1.TerminationMessageReadFile,
		},
		"imagePullPolicy with a tag": {
			manifest: pod(container),
			get:      func(p *Pod) any { return p.Spec.Containers[0].ImagePullPolicy },
			want:     v1.PullIfNotPresent,
		},
		"imagePullPolicy without a tag": {
			manifest: pod("  containers:\n  - name: app\n    image: alpine\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].ImagePullPolicy },
			want:     v1.PullAlways,
		},
		"imagePullPolicy kept": {
			manifest: pod("  containers:\n  - name: app\n    image: alpine\n    imagePullPolicy: Never\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].ImagePullPolicy },
			want:     v1.PullNever,
		},
		"port protocol": {
			manifest: pod(container + "    ports:\n    - containerPort: 80\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].Ports[0] },
			want:     v1.ContainerPort{ContainerPort: 80, Protocol: v1.ProtocolTCP},
		},
		"hostPort on the host network": {
			manifest: pod("  hostNetwork: true\n" + container + "    ports:\n    - containerPort: 80\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].Ports[0] },
			want:     v1.ContainerPort{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP},
		},
		"requests from limits": {
			manifest: pod(container + "    resources:\n      limits:\n        cpu: 500m\n        memory: 64Mi\n      requests:\n        cpu: 100m\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].Resources.Requests },
			want:     v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		},
		"probe": {
			manifest: pod(container + "    livenessProbe:\n      httpGet:\n        port: 8080\n"),
			get:      func(p *Pod) any { return *p.Spec.Containers[0].LivenessProbe },
			want: v1.Probe{
				ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
				TimeoutSeconds:   1,
				PeriodSeconds:    10,
				SuccessThreshold: 1,
				FailureThreshold: 3,
			},
		},
		"probe values kept": {
			manifest: pod(container + "    readinessProbe:\n      grpc:\n        port: 9090\n      timeoutSeconds: 5\n      periodSeconds: 2\n      successThreshold: 2\n      failureThreshold: 1\n"),
			get:      func(p *Pod) any { return *p.Spec.Containers[0].ReadinessProbe },
			want: v1.Probe{
				ProbeHandler:     v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090, Service: ptr.To("")}},
				TimeoutSeconds:   5,
				PeriodSeconds:    2,
				SuccessThreshold: 2,
				FailureThreshold: 1,
			},
		},
		"lifecycle httpGet": {
			manifest: pod(container + "    lifecycle:\n      preStop:\n        httpGet:\n          path: /drain\n          port: 80\n"),
			get:      func(p *Pod) any { return *p.Spec.Containers[0].Lifecycle.PreStop.HTTPGet },
			want:     v1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP},
		},
		"env fieldRef apiVersion": {
			manifest: pod(container + "    env:\n    - name: NAME\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.name\n"),
			get:      func(p *Pod) any { return p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion },
			want:     "v1",
		},
		"volume without a source is an emptyDir": {
			manifest: pod(container + "  volumes:\n  - name: scratch\n"),
			get:      func(p *Pod) any { return p.Spec.Volumes[0].VolumeSource },
			want:     v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}},
		},
		"hostPath type": {
			manifest: pod(container + "  volumes:\n  - name: logs\n    hostPath:\n      path: /var/log\n"),
			get:      func(p *Pod) any { return *p.Spec.Volumes[0].HostPath },
			want:     v1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(v1.HostPathUnset)},
		},
		"init containers too": {
			manifest: pod("  initContainers:\n  - name: init\n    image: busybox\n" + container),
			get:      func(p *Pod) any { return p.Spec.InitContainers[0].ImagePullPolicy },
			want:     v1.PullAlways,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := decodeOne(t, tt.manifest)
			if got := tt.get(p); !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
