package podspec

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
)

func TestCheckObjectVolume(t *testing.T) {
	vol := func(src v1.VolumeProjection) *v1.Volume {
		return &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{src}}}}
	}
	token := v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}
	for name, tc := range map[string]struct {
		vol   *v1.Volume
		mint  bool
		field string
	}{
		"token standalone":   {vol(token), false, "spec.volumes[3].projected.sources[0].serviceAccountToken"},
		"token as a node":    {vol(token), true, ""},
		"clusterTrustBundle": {vol(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "ca"}}), true, "spec.volumes[3].projected.sources[0].clusterTrustBundle"},
		"podCertificate":     {vol(v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{}}), true, "spec.volumes[3].projected.sources[0].podCertificate"},
		"path leaves": {&v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "../a"}}}}}, false,
			"spec.volumes[3].configMap.items[0].path"},
		"node field": {&v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}}}, false,
			"spec.volumes[3].downwardAPI.items[0].fieldRef.fieldPath"},
	} {
		err := CheckVolume(tc.vol, 3, tc.mint)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.field != "" && (!errors.Is(err, runtime.ErrUnsupported) || !strings.HasPrefix(err.Error(), tc.field+":")):
			t.Errorf("%s: %v, want ErrUnsupported naming %s", name, err, tc.field)
		}
	}
}
