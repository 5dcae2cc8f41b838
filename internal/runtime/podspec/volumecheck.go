package podspec

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// ObjectVolume says whether vol is a configMap, secret, downwardAPI or
// projected volume: one whose files the agent writes from the pod and the
// objects it references (package volumes).
func ObjectVolume(vol *v1.Volume) bool {
	return vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil
}

// checkObjectVolume refuses the ObjectVolume vol, the i-th of the pod's,
// unless podward can project it: a projected clusterTrustBundle or podCertificate
// source, a serviceAccountToken source when canMintTokens is false
// (standalone: nothing can mint one), a downwardAPI fieldRef a volume
// cannot project, and a file path that would leave the volume. The error
// wraps runtime.ErrUnsupported and names the field. It has no side
// effects.
func checkObjectVolume(vol *v1.Volume, i int, canMintTokens bool) error {
	p := fmt.Sprintf("spec.volumes[%d]", i)
	switch {
	case vol.ConfigMap != nil:
		return checkItems(vol.ConfigMap.Items, p+".configMap")
	case vol.Secret != nil:
		return checkItems(vol.Secret.Items, p+".secret")
	case vol.DownwardAPI != nil:
		return checkDownward(vol.DownwardAPI.Items, p+".downwardAPI")
	case vol.Projected != nil:
		for j, src := range vol.Projected.Sources {
			if err := checkSource(&src, fmt.Sprintf("%s.projected.sources[%d]", p, j), canMintTokens); err != nil {
				return err
			}
		}
		return nil
	}
	return runtime.Unsupported("%s: Unsupported value: volume %q is not a configMap, secret, downwardAPI or projected volume", p, vol.Name)
}

func checkSource(src *v1.VolumeProjection, p string, canMintTokens bool) error {
	switch {
	case src.ConfigMap != nil:
		return checkItems(src.ConfigMap.Items, p+".configMap")
	case src.Secret != nil:
		return checkItems(src.Secret.Items, p+".secret")
	case src.DownwardAPI != nil:
		return checkDownward(src.DownwardAPI.Items, p+".downwardAPI")
	case src.ServiceAccountToken != nil:
		if !canMintTokens {
			return runtime.Unsupported("%s.serviceAccountToken: Unsupported value: podward standalone cannot mint service account tokens (run it as a node of a cluster, or set automountServiceAccountToken: false)", p)
		}
		return checkPath(src.ServiceAccountToken.Path, p+".serviceAccountToken.path")
	case src.ClusterTrustBundle != nil:
		return runtime.Unsupported("%s.clusterTrustBundle: Unsupported value: podward does not project ClusterTrustBundles", p)
	case src.PodCertificate != nil:
		return runtime.Unsupported("%s.podCertificate: Unsupported value: podward does not project pod certificates", p)
	}
	return runtime.Unsupported("%s: Unsupported value: a projected volume source podward does not know", p)
}

func checkItems(items []v1.KeyToPath, p string) error {
	for j, it := range items {
		if err := checkPath(it.Path, fmt.Sprintf("%s.items[%d].path", p, j)); err != nil {
			return err
		}
	}
	return nil
}

func checkDownward(items []v1.DownwardAPIVolumeFile, p string) error {
	for j, it := range items {
		ip := fmt.Sprintf("%s.items[%d]", p, j)
		if err := checkPath(it.Path, ip+".path"); err != nil {
			return err
		}
		if it.FieldRef != nil && !DownwardVolumeField(it.FieldRef.FieldPath) {
			return runtime.Unsupported("%s.fieldRef.fieldPath: Unsupported value: %q: a downwardAPI volume projects metadata.name, metadata.namespace, metadata.uid, metadata.labels and metadata.annotations", ip, it.FieldRef.FieldPath)
		}
	}
	return nil
}

func checkPath(path, p string) error {
	if err := hostfs.CheckPayloadPath(path); err != nil {
		return runtime.Unsupported("%s: Invalid value: %q: %v", p, path, err)
	}
	return nil
}

// DownwardVolumeField says whether a downwardAPI volume may project field,
// which is fewer than env may: the pod's name, namespace, uid, its labels
// and annotations, all or one; no node, IPs or service account.
func DownwardVolumeField(field string) bool {
	switch field {
	case "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations":
		return true
	}
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if strings.HasPrefix(field, prefix) && strings.HasSuffix(field, "']") && len(field) > len(prefix)+2 {
			return true
		}
	}
	return false
}
