package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// describe pod shows envFrom and resourceFieldRef as kubectl does.
func TestDescribeEnvSources(t *testing.T) {
	yes := true
	c := v1.Container{
		Name: "app", Image: "busybox",
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Optional: &yes}},
		},
		Env: []v1.EnvVar{
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "REQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu"}}},
		},
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	out := regexp.MustCompile(`[ \t]+`).ReplaceAllString(describePod(p, nil, time.Now()), " ")
	for _, want := range []string{
		"\n Environment Variables from:\n cfg ConfigMap Optional: false\n creds Secret with prefix 'DB_' Optional: true\n Environment:\n",
		"\n MEM: 64 (limits.memory)\n",
		"\n CPU: node allocatable (limits.cpu)\n",
		"\n REQ: 0 (requests.cpu)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pod has no %q:\n%s", want, out)
		}
	}
}
