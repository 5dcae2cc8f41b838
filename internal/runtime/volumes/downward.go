package volumes

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
)

// downwardFiles adds the downward API's items to p.
func downwardFiles(in Input, p hostfs.Payload, items []v1.DownwardAPIVolumeFile, def fs.FileMode) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = fieldValue(in, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			value, err = resourceValue(in, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return err
		}
		p[it.Path] = hostfs.File{Data: []byte(value), Mode: itemMode(it.Mode, def)}
	}
	return nil
}

// fieldValue resolves a downwardAPI volume's fieldRef: the pod's name,
// namespace, uid, one label or annotation, or all of them in the kubelet's
// format.
func fieldValue(in Input, field string) (string, error) {
	switch field {
	case "metadata.labels":
		return formatMap(in.Pod.Labels), nil
	case "metadata.annotations":
		return formatMap(in.Pod.Annotations), nil
	}
	if !podspec.DownwardVolumeField(field) {
		return "", fmt.Errorf("unsupported fieldPath: %s", field)
	}
	v, ok := in.Pod.FieldRef(field, "", "")
	if !ok {
		return "", fmt.Errorf("unsupported fieldPath: %s", field)
	}
	return v, nil
}

// formatMap is the kubelet's file of labels or annotations: one
// `key="value"` line per key, sorted, the value quoted as Go quotes it, and
// no newline after the last.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// resourceValue resolves a resourceFieldRef of a container of the pod,
// as env's does (podspec.ResourceValue): a limit the container does not
// set is the pod's, else the machine's allocatable; the value is divided by
// the divisor (default 1) and rounded up.
func resourceValue(in Input, ref *v1.ResourceFieldSelector) (string, error) {
	c := in.container(ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: container %q not found", ref.ContainerName)
	}
	return podspec.ResourceValue(in.Pod, c, ref, in.Allocatable)
}

// container is the pod's container (of any role) named name.
func (in Input) container(name string) *v1.Container {
	for _, ref := range in.Pod.Containers() {
		if ref.Name == name {
			return in.Pod.Container(ref)
		}
	}
	return nil
}
