package podspec

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

func TestCheckVolume(t *testing.T) {
	hostPath := func(typ *v1.HostPathType) v1.VolumeSource {
		return v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv", Type: typ}}
	}
	emptyDir := func(m v1.StorageMedium) v1.VolumeSource {
		return v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: m}}
	}
	tests := map[string]struct {
		src  v1.VolumeSource
		want string // "" for no error
	}{
		"emptyDir":           {src: emptyDir(v1.StorageMediumDefault)},
		"emptyDir in memory": {src: emptyDir(v1.StorageMediumMemory)},
		"emptyDir of hugepages": {
			src:  emptyDir(v1.StorageMediumHugePages),
			want: `spec.volumes[2].emptyDir.medium: Unsupported value: "HugePages" (volume "v"): podward supports only the default medium and Memory`,
		},
		"hostPath of no type":    {src: hostPath(nil)},
		"hostPath of empty type": {src: hostPath(ptr.To(v1.HostPathUnset))},
		"hostPath of a type":     {src: hostPath(ptr.To(v1.HostPathBlockDev))},
		"hostPath of an unknown type": {
			src:  hostPath(ptr.To(v1.HostPathType("Foo"))),
			want: `spec.volumes[2].hostPath.type: Unsupported value: "Foo" (volume "v")`,
		},
		"configMap": {
			src:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}},
			want: `spec.volumes[2]: Unsupported value: volume "v": podward supports only emptyDir and hostPath volumes`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := CheckVolume(&v1.Volume{Name: "v", VolumeSource: tc.src}, 2)
			checkErr(t, err, tc.want)
		})
	}
}

// Every type Kubernetes defines is known; others are not.
func TestCheckVolumeKnowsEveryHostPathType(t *testing.T) {
	for _, typ := range []v1.HostPathType{
		v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
		v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
	} {
		vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv", Type: &typ}}}
		if err := CheckVolume(vol, 0); err != nil {
			t.Errorf("type %q: %v", typ, err)
		}
	}
}

func TestCheckContainer(t *testing.T) {
	tests := map[string]struct {
		mod  func(c *v1.Container)
		want string // "" for no error
	}{
		"runnable": {mod: func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "UID", ValueFrom: fieldRef("metadata.uid")}}
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "a/b", RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)}}
		}},
		"env it cannot read": {
			mod: func(c *v1.Container) {
				c.Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}}
			},
			want: "spec.containers[0].env[0].valueFrom.fileKeyRef: Unsupported value: podward does not read environment variables from files",
		},
		"volumeDevices": {
			mod:  func(c *v1.Container) { c.VolumeDevices = []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}} },
			want: "spec.containers[0].volumeDevices: Unsupported value: podward has no block devices to give",
		},
		"mount of no volume": {
			mod: func(c *v1.Container) {
				c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "nothing", MountPath: "/x"})
			},
			want: `spec.containers[0].volumeMounts[1].name: Not found: "nothing"`,
		},
		"mount over the root": {
			mod:  func(c *v1.Container) { c.VolumeMounts[0].MountPath = "/a/.." },
			want: `spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/a/..": cannot mount over the container's root`,
		},
		"recursively read-only": {
			mod:  func(c *v1.Container) { c.VolumeMounts[0].RecursiveReadOnly = ptr.To(v1.RecursiveReadOnlyEnabled) },
			want: `spec.containers[0].volumeMounts[0].recursiveReadOnly: Unsupported value: "Enabled": supported values: "Disabled", "IfPossible"`,
		},
		"subPath leaving its volume": {
			mod:  func(c *v1.Container) { c.VolumeMounts[0].SubPath = "../etc" },
			want: `spec.containers[0].volumeMounts[0].subPath: Invalid value: "../etc": must not contain '..'`,
		},
		"absolute subPath": {
			mod:  func(c *v1.Container) { c.VolumeMounts[0].SubPath = "/etc" },
			want: `spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			pod.Spec.Containers = []v1.Container{{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
			tc.mod(&pod.Spec.Containers[0])
			ref := model.ContainerRef{Role: model.RoleMain, Index: 0, Name: "app"}
			checkErr(t, CheckContainer(pod, ref, pod.Container(ref)), tc.want)
		})
	}
}

// A container the pod does not have is not found, not unsupported.
func TestCheckContainerMissing(t *testing.T) {
	pod := testPod()
	ref := model.ContainerRef{Role: model.RoleInit, Index: 0, Name: "setup"}
	err := CheckContainer(pod, ref, nil)
	if !errors.Is(err, runtime.ErrNotFound) || errors.Is(err, runtime.ErrUnsupported) {
		t.Fatalf("CheckContainer = %v, want ErrNotFound", err)
	}
}

// checkErr fails t unless err is nil when want is "", or wraps
// runtime.ErrUnsupported and says want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, runtime.ErrUnsupported) || err.Error() != want {
		t.Fatalf("err = %v\nwant ErrUnsupported %q", err, want)
	}
}
