package cli

import (
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// describeEnvFrom lists a container's envFrom sources as kubectl does:
// each source's name, its kind and prefix, and whether it is optional.
func describeEnvFrom(w prefixWriter, c v1.Container) {
	w.write(2, "Environment Variables from:\n")
	for _, e := range c.EnvFrom {
		var name, kind string
		var optional *bool
		switch {
		case e.ConfigMapRef != nil:
			name, kind, optional = e.ConfigMapRef.Name, "ConfigMap", e.ConfigMapRef.Optional
		case e.SecretRef != nil:
			name, kind, optional = e.SecretRef.Name, "Secret", e.SecretRef.Optional
		}
		if e.Prefix != "" {
			kind += " with prefix '" + e.Prefix + "'"
		}
		w.write(3, "%s\t%s\tOptional: %t\n", name, kind, optional != nil && *optional)
	}
}

// resourceFieldValue is what kubectl describe shows for a resourceFieldRef
// of container c: the value from c's own resources (divided by the
// divisor, rounded up), "node allocatable" for a cpu or memory limit c
// does not set (the node's is not known here), "" for a resource it does
// not know.
func resourceFieldValue(ref *v1.ResourceFieldSelector, c *v1.Container) string {
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	} else if kind != "requests" {
		return ""
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	q := list[v1.ResourceName(name)]
	var v int64
	switch {
	case name == string(v1.ResourceCPU):
		v = int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage),
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		v = int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))
	default:
		return ""
	}
	if v == 0 && (ref.Resource == "limits.cpu" || ref.Resource == "limits.memory") {
		return "node allocatable"
	}
	return strconv.FormatInt(v, 10)
}
