package model

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The API server's rules for an update of the ephemeralcontainers
// subresource (pkg/apis/core/validation/validation.go,
// ValidatePodEphemeralContainersUpdate and validateEphemeralContainers).
func TestValidateEphemeralUpdate(t *testing.T) {
	old := &Pod{Pod: &v1.Pod{Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "app", Image: "busybox"}},
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "dbg1", Image: "busybox", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent,
		}}},
	}}, Defer: []v1.Container{{Name: "upload", Image: "busybox"}}}
	ec := func(name string, mod func(*v1.EphemeralContainerCommon)) v1.EphemeralContainer {
		c := v1.EphemeralContainerCommon{Name: name, Image: "busybox", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent}
		if mod != nil {
			mod(&c)
		}
		return v1.EphemeralContainer{EphemeralContainerCommon: c}
	}
	kept := old.Spec.EphemeralContainers[0]
	cases := map[string]struct {
		next []v1.EphemeralContainer
		want []string
	}{
		"an addition":          {next: []v1.EphemeralContainer{kept, ec("dbg2", nil)}},
		"an addition targeted": {next: []v1.EphemeralContainer{kept, {EphemeralContainerCommon: ec("dbg2", nil).EphemeralContainerCommon, TargetContainerName: "app"}}},
		"a mount of the pod's volume": {next: []v1.EphemeralContainer{kept, ec("dbg2", func(c *v1.EphemeralContainerCommon) {
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		})}},
		"a removal": {next: []v1.EphemeralContainer{ec("dbg2", nil)}, want: []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg1" may not be removed`}},
		"a change": {next: []v1.EphemeralContainer{ec("dbg1", func(c *v1.EphemeralContainerCommon) { c.Image = "alpine" })},
			want: []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg1" may not be changed`}},
		"a regular container's name": {next: []v1.EphemeralContainer{kept, ec("app", nil)}, want: []string{`spec.ephemeralContainers[1].name: Duplicate value: "app"`}},
		"a defer container's name":   {next: []v1.EphemeralContainer{kept, ec("upload", nil)}, want: []string{`spec.ephemeralContainers[1].name: Duplicate value: "upload"`}},
		"two of one name":            {next: []v1.EphemeralContainer{kept, ec("x", nil), ec("x", nil)}, want: []string{`spec.ephemeralContainers[2].name: Duplicate value: "x"`}},
		"an unknown target": {next: []v1.EphemeralContainer{kept, {EphemeralContainerCommon: ec("dbg2", nil).EphemeralContainerCommon, TargetContainerName: "nope"}},
			want: []string{`spec.ephemeralContainers[1].targetContainerName: Not found: "nope"`}},
		"forbidden fields": {next: []v1.EphemeralContainer{kept, ec("dbg2", func(c *v1.EphemeralContainerCommon) {
			c.Ports = []v1.ContainerPort{{ContainerPort: 80}}
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			c.ReadinessProbe = &v1.Probe{}
			c.Lifecycle = &v1.Lifecycle{}
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
		})}, want: []string{
			"spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[1].resources: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[1].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[1].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
		}},
		"no image": {next: []v1.EphemeralContainer{kept, ec("dbg2", func(c *v1.EphemeralContainerCommon) { c.Image = "" })},
			want: []string{"spec.ephemeralContainers[1].image: Required value"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := FormatErrors(ValidateEphemeralUpdate(old, tc.next))
			if want := strings.Join(tc.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// On create, the API server refuses them (validatePodCreate); so does
// Validate.
func TestValidateEphemeralOnCreate(t *testing.T) {
	p := &Pod{Pod: &v1.Pod{}}
	p.Name, p.Namespace = "p", "default"
	p.Spec.Containers = []v1.Container{{Name: "app", Image: "busybox"}}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "d", Image: "busybox"}}}
	Default(p)
	if got := FormatErrors(Validate(p)); !strings.Contains(got, "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Errorf("errors: %s", got)
	}
}
