package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// kubeAPIAccess is the volume the API server's ServiceAccount admission
// gives every pod.
func kubeAPIAccess() v1.Volume {
	return v1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// BenchmarkKubeAPIAccess100 sets up the default kube-api-access volume of
// 100 pods, each on its own tmpfs, and reports what that costs: the
// tmpfs mounts and the memory they hold (the pages their files use), per
// 100 pods, and the time to set them up.
func BenchmarkKubeAPIAccess100(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounting a tmpfs needs root")
	}
	objs := &objectstest.Objects{}
	// A CA bundle of a usual size (about 1.1 kB), and tokens of one (about 1 kB).
	objs.Put(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kube-root-ca.crt"},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("MIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n", 17) + "-----END CERTIFICATE-----\n"}})
	tokens := tokenOfSize{Objects: objs}
	in := Input{Objects: runtime.Objects{Getter: objs, Tokens: tokens}}
	vol := kubeAPIAccess()
	var mounts int
	var bytes int64
	for i := 0; i < b.N; i++ {
		root := b.TempDir()
		mounts, bytes = 0, 0
		for p := 0; p < 100; p++ {
			pod := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", p), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", p))}}}
			pod.Spec.Volumes = []v1.Volume{vol}
			dir := filepath.Join(root, string(pod.UID))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			in.Pod = pod
			h := Host{Dir: func(v *v1.Volume) string { return filepath.Join(dir, v.Name) }, CanMount: true, Now: time.Now}
			if err := Setup(context.Background(), in, h, &pod.Spec.Volumes[0]); err != nil {
				b.Fatal(err)
			}
			var st unix.Statfs_t
			if err := unix.Statfs(h.Dir(&vol), &st); err != nil {
				b.Fatal(err)
			}
			if st.Type == unix.TMPFS_MAGIC {
				mounts++
			}
			bytes += int64(st.Blocks-st.Bfree) * st.Bsize
		}
		b.StopTimer()
		for p := 0; p < 100; p++ {
			if err := hostfs.RemoveVolumes(filepath.Join(root, fmt.Sprintf("uid-%d", p))); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(mounts), "tmpfs/100pods")
	b.ReportMetric(float64(bytes)/1024, "KiB/100pods")
}

// tokenOfSize mints tokens of a real one's size.
type tokenOfSize struct{ *objectstest.Objects }

func (t tokenOfSize) Token(ctx context.Context, req objects.TokenRequest) (objects.Token, error) {
	tok, err := t.Objects.Token(ctx, req)
	tok.Token += strings.Repeat("x", 1000)
	return tok, err
}
