package volumes

import (
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/runtime/hostfs"
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
	if !volumeField(field) {
		return "", fmt.Errorf("unsupported fieldPath: %s", field)
	}
	v, ok := in.Pod.FieldRef(field, "", "")
	if !ok {
		return "", fmt.Errorf("unsupported fieldPath: %s", field)
	}
	return v, nil
}

// volumeField says whether a downwardAPI volume may project field, which
// is fewer than env may: no node, IPs or service account.
func volumeField(field string) bool {
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

// resourceValue resolves a resourceFieldRef of a container of the pod, as
// the kubelet does: a limit the container does not set is the node's
// allocatable; the value is divided by the divisor (default 1) and
// rounded up.
func resourceValue(in Input, ref *v1.ResourceFieldSelector) (string, error) {
	c := in.container(ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: container %q not found", ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[v1.ResourceName(name)]
	if !set && kind == "limits" {
		q = in.Allocatable[v1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	switch v1.ResourceName(name) {
	case v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	if strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
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
