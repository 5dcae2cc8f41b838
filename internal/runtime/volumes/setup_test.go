package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
)

func TestSetupAndRefresh(t *testing.T) {
	pod, objs := setup(t)
	root := t.TempDir()
	gid := int64(2000)
	h := Host{Dir: func(v *v1.Volume) string { return filepath.Join(root, v.Name) }, Now: time.Now}
	fsGroupSet := os.Geteuid() == 0
	if fsGroupSet {
		pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	}
	in := Input{Pod: pod, Objects: runtime.Objects{Getter: objs, Tokens: objs}}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(root, "secret"), unix.MNT_DETACH) })
	for _, name := range []string{"cm-items", "down", "secret"} {
		if err := Setup(context.Background(), in, h, pod.Volume(name)); err != nil {
			t.Fatal(err)
		}
	}
	// Not root: the secret volume is computed, never written to disk.
	if _, err := os.Lstat(filepath.Join(root, "secret", "k")); os.Geteuid() != 0 && err == nil {
		t.Error("secret written to disk without a tmpfs")
	}
	file := filepath.Join(root, "cm-items", "dir", "a.txt")
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	if fsGroupSet && (st.Gid != uint32(gid) || st.Mode&0o777 != 0o440) {
		t.Errorf("fsGroup: gid %d mode %o, want %d and 0440 (0400 | 0440)", st.Gid, st.Mode&0o777, gid)
	}
	next := pod.DeepCopy()
	next.Labels["b"] = "3"
	in.Pod.Pod = next
	if err := Refresh(context.Background(), in, h); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "down", "b")); err != nil || string(data) != "3" {
		t.Errorf("down/b = %q, %v after the refresh, want 3", data, err)
	}
	if _, err := os.Stat(filepath.Join(root, "cm")); err == nil {
		t.Error("Refresh set up a volume that was not")
	}
}

func TestTokenOwnedByThePodsUser(t *testing.T) {
	pod, objs := setup(t)
	in := Input{Pod: pod, Objects: runtime.Objects{Getter: objs, Tokens: objs}}
	got, err := Payload(context.Background(), in, pod.Volume("token"))
	if err != nil {
		t.Fatal(err)
	}
	if f := got["token"]; f.Mode != 0o420 || f.UID != nil {
		t.Errorf("token without runAsUser nor fsGroup: mode %o uid %v, want defaultMode, no owner", f.Mode, f.UID)
	}
	uid := int64(1000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &uid}
	got, err = Payload(context.Background(), in, pod.Volume("token"))
	if err != nil {
		t.Fatal(err)
	}
	if f := got["token"]; f.Mode != 0o600 || f.UID == nil || *f.UID != uid || got["ca.crt"].UID != nil {
		t.Errorf("token of a pod whose containers all run as %d: mode %o uid %v, want 0600 owned by it (and only the token)", uid, f.Mode, f.UID)
	}
	other := int64(1001)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x"}} // runs as the pod's user, 1000
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: &other}
	got, _ = Payload(context.Background(), in, pod.Volume("token"))
	if f := got["token"]; f.UID != nil {
		t.Errorf("containers of other users: uid %v, want none", *f.UID)
	}
}
