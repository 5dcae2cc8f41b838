package cli

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// describe pod shows configMap, secret, downwardAPI and projected volumes
// as kubectl does, each block of lines aligned as kubectl's tabwriter
// aligns it (a line without a tab ends a block: a projected token's
// TokenExpirationSeconds widens the QoS Class and the lines after it).
func TestDescribeObjectVolumes(t *testing.T) {
	yes, seconds := true, int64(3607)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", Optional: &yes}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}},
			}}}},
			{Name: "kube-api-access-x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &seconds}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{DownwardAPI: &v1.DownwardAPIProjection{}},
			}}}},
		},
	}}
	out := describePod(p, nil, time.Now())
	for _, want := range []string{
		"\nQoS Class:                   BestEffort\n",
		"\n  cfg:\n    Type:      ConfigMap (a volume populated by a ConfigMap)\n    Name:      app-config\n    Optional:  false\n",
		"\n  sec:\n    Type:        Secret (a volume populated by a Secret)\n    SecretName:  creds\n    Optional:    true\n",
		"\n  info:\n    Type:  DownwardAPI (a volume populated by information about the pod)\n    Items:\n      metadata.labels -> labels\n      limits.memory -> mem\n",
		"\n  kube-api-access-x:\n    Type:                    Projected (a volume that contains injected data from multiple sources)\n    TokenExpirationSeconds:  3607\n    ConfigMapName:           kube-root-ca.crt\n    Optional:                false\n    DownwardAPI:             true\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pod has no %q:\n%s", want, out)
		}
	}
}
