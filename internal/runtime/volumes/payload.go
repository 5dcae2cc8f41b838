package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
)

// defaultMode is every kind's defaultMode when the spec has none, as the
// API server defaults it (secrets' too).
const defaultMode fs.FileMode = 0o644

// Input is what a volume's payload is computed from.
type Input struct {
	Pod     *model.Pod
	Objects runtime.Objects
	// Allocatable is the machine's (cpu, memory, ephemeral-storage): a
	// resourceFieldRef's limit when the container has none
	// (podspec.ResourceValue).
	Allocatable v1.ResourceList
	// Dir is the volume's directory as written now ("" when it is not
	// yet): the tokens it holds are passed on as TokenRequest.Current.
	Dir string
}

// Managed says whether vol is of a kind this package computes: configMap,
// secret, downwardAPI or projected (podspec.ObjectVolume).
func Managed(vol *v1.Volume) bool { return podspec.ObjectVolume(vol) }

// InMemory says whether vol must live on a tmpfs, never on persistent
// disk: a secret or projected volume (which may hold secrets and tokens),
// as the kubelet's.
func InMemory(vol *v1.Volume) bool { return vol.Secret != nil || vol.Projected != nil }

// Payload computes what the Managed volume vol of in.Pod holds. An object
// that does not exist and is not optional, a missing key, a token that
// cannot be had or a failed read is a *runtime.VolumeError with the
// kubelet's message; the caller retries it. ctx bounds the reads.
func Payload(ctx context.Context, in Input, vol *v1.Volume) (hostfs.Payload, error) {
	p := hostfs.Payload{}
	var err error
	switch {
	case vol.ConfigMap != nil:
		err = configMapFiles(ctx, in, p, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, mode(vol.ConfigMap.DefaultMode))
	case vol.Secret != nil:
		err = secretFiles(ctx, in, p, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, mode(vol.Secret.DefaultMode))
	case vol.DownwardAPI != nil:
		err = downwardFiles(in, p, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
	case vol.Projected != nil:
		err = projectedFiles(ctx, in, p, vol.Projected)
	default:
		return nil, fmt.Errorf("volume %q: not a configMap, secret, downwardAPI or projected volume", vol.Name)
	}
	if err != nil {
		return nil, &runtime.VolumeError{Volume: vol.Name, Err: err}
	}
	return p, nil
}

func mode(m *int32) fs.FileMode {
	if m == nil {
		return defaultMode
	}
	return fs.FileMode(*m) & fs.ModePerm
}

func itemMode(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// configMapFiles adds a ConfigMap's keys (data and binaryData) to p: every
// key under its own name, or only items, each at its path.
func configMapFiles(ctx context.Context, in Input, p hostfs.Payload, name string, items []v1.KeyToPath, optional *bool, def fs.FileMode) error {
	cm, err := objects.GetConfigMap(ctx, in.Objects.Getter, in.Pod.Namespace, name)
	if err != nil {
		if objects.MissingOptional(err, optional) {
			return nil
		}
		return err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(p, data, items, optional, def, "configmap references non-existent config key: %s")
}

// secretFiles is configMapFiles for a Secret.
func secretFiles(ctx context.Context, in Input, p hostfs.Payload, name string, items []v1.KeyToPath, optional *bool, def fs.FileMode) error {
	s, err := objects.GetSecret(ctx, in.Objects.Getter, in.Pod.Namespace, name)
	if err != nil {
		if objects.MissingOptional(err, optional) {
			return nil
		}
		return err
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = v
	}
	// As the API server merges them: stringData wins.
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return keyFiles(p, data, items, optional, def, "references non-existent secret key: %s")
}

// keyFiles adds data to p: each key as a file of its name, or with items
// only the keys they name at their paths. A missing key is an error with
// missing's message unless optional.
func keyFiles(p hostfs.Payload, data map[string][]byte, items []v1.KeyToPath, optional *bool, def fs.FileMode, missing string) error {
	if len(items) == 0 {
		for k, v := range data {
			p[k] = hostfs.File{Data: v, Mode: def}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if isTrue(optional) {
				continue
			}
			return fmt.Errorf(missing, it.Key)
		}
		p[it.Path] = hostfs.File{Data: v, Mode: itemMode(it.Mode, def)}
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// current reads the file at path in the volume as written now; "" when
// there is none.
func (in Input) current(path string) string {
	if in.Dir == "" {
		return ""
	}
	// A file that cannot be read is as none: a new token is asked for.
	data, err := os.ReadFile(filepath.Join(in.Dir, path))
	if err != nil {
		return ""
	}
	return string(data)
}
