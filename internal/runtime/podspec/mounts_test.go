package podspec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

func TestMountSource(t *testing.T) {
	emptyDirs := t.TempDir()
	host := t.TempDir()
	if err := os.Mkdir(filepath.Join(emptyDirs, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(host, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(host, "nothing"), filepath.Join(host, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgData := writeConfigMapVolume(t, filepath.Join(emptyDirs, "cfg"))
	tests := map[string]struct {
		m         v1.VolumeMount
		vars      Vars
		want      string // the source, when no error
		wantErr   string
		configErr bool // wantErr is a runtime.ContainerConfigError
	}{
		"emptyDir": {m: v1.VolumeMount{Name: "data", MountPath: "/data"}, want: filepath.Join(emptyDirs, "data")},
		"hostPath": {m: v1.VolumeMount{Name: "host", MountPath: "/host"}, want: host},
		"subPath":  {m: v1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "a/b"}, want: filepath.Join(emptyDirs, "data", "a", "b")},
		"subPathExpr": {
			m: v1.VolumeMount{Name: "host", MountPath: "/logs", SubPathExpr: "logs/$(POD)"}, vars: Vars{"POD": "web"},
			want: filepath.Join(host, "logs", "web"),
		},
		"subPathExpr with an unknown variable": {
			m: v1.VolumeMount{Name: "host", MountPath: "/h", SubPathExpr: "$(MISSING)"}, wantErr: "missing value for MISSING", configErr: true,
		},
		"no such volume": {m: v1.VolumeMount{Name: "nothing", MountPath: "/x"}, wantErr: `volume "nothing" not found`},
		"a kind podward does not mount": {
			m: v1.VolumeMount{Name: "iscsi", MountPath: "/disk"}, wantErr: `volume "iscsi": unsupported type`,
		},
		"configMap": {m: v1.VolumeMount{Name: "cfg", MountPath: "/cfg"}, want: filepath.Join(emptyDirs, "cfg")},
		"configMap subPath, in the data it holds now": {
			m: v1.VolumeMount{Name: "cfg", MountPath: "/cfg/a", SubPath: "a"}, want: filepath.Join(emptyDirs, "cfg", cfgData, "a"),
		},
		// The kubelet's makeMounts messages, which name no host path.
		"subPath out through a symlink": {
			m:       v1.VolumeMount{Name: "host", MountPath: "/out", SubPath: "out"},
			wantErr: `failed to prepare subPath for volumeMount "host" of container "c"`, configErr: true,
		},
		"subPath out through a symlink, to be created": {
			m:       v1.VolumeMount{Name: "host", MountPath: "/out", SubPath: "out/new"},
			wantErr: `failed to create subPath directory for volumeMount "host" of container "c"`, configErr: true,
		},
		"subPath through a symlink to nothing": {
			m:       v1.VolumeMount{Name: "host", MountPath: "/d", SubPath: "dangling"},
			wantErr: `failed to create subPath directory for volumeMount "host" of container "c"`, configErr: true,
		},
		"subPath through a file": {
			m:       v1.VolumeMount{Name: "host", MountPath: "/f", SubPath: "file/dir"},
			wantErr: `failed to prepare subPath for volumeMount "host" of container "c"`, configErr: true,
		},
		"subPathExpr leaving its volume": {
			m: v1.VolumeMount{Name: "host", MountPath: "/up", SubPathExpr: "$(UP)"}, vars: Vars{"UP": ".."},
			wantErr: "unable to provision SubPath `..`: must not contain '..'", configErr: true,
		},
		"subPathExpr expanding to an absolute path": {
			m: v1.VolumeMount{Name: "host", MountPath: "/abs", SubPathExpr: "$(P)"}, vars: Vars{"P": outside},
			wantErr: "error SubPath `" + outside + "` must not be an absolute path", configErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Volumes = []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
				{Name: "iscsi", VolumeSource: v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{}}},
			}
			got, sub, err := MountSource(pod, "c", &tc.m, tc.vars, emptyDirs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MountSource = %q, %v, want %q", got, err, tc.wantErr)
				}
				var cfgErr *runtime.ContainerConfigError
				if errors.As(err, &cfgErr) != tc.configErr {
					t.Fatalf("MountSource error %v: a ContainerConfigError is %v, want %v", err, !tc.configErr, tc.configErr)
				}
				// Refused before anything was created.
				if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
					t.Fatalf("outside the volume: %d entries, %v; want none", len(entries), err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MountSource = %q, %v, want %q", got, err, tc.want)
			}
			if hasSub := tc.m.SubPath != "" || tc.m.SubPathExpr != ""; (sub != nil) != hasSub || sub != nil && sub.HostPath() != got {
				t.Fatalf("MountSource's subPath = %+v, want one for %q at %q", sub, tc.m.SubPath+tc.m.SubPathExpr, got)
			}
			if fi, err := os.Stat(got); err != nil || !fi.IsDir() && tc.m.Name != "cfg" {
				t.Errorf("source %s is not a directory: %v", got, err)
			}
		})
	}
}

// writeConfigMapVolume writes a configMap volume holding key a at dir and
// returns the name of its data directory.
func writeConfigMapVolume(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := hostfs.AtomicWrite(dir, hostfs.Payload{"a": {Data: []byte("A"), Mode: 0o644}}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	data, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
