package podspec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// ExpandSubPath is m's subPathExpr expanded with vars, as the kubelet
// expands it when it makes a container's mounts: a reference to a variable
// that is not set, or set to "", is an error naming it ("missing value for
// A, B", the names sorted), and so is a result that is an absolute path or
// has a ".." element. These are only known once the container's variables
// are (an env value from a ConfigMap can change), so each is a
// runtime.ContainerConfigError with the kubelet's message: the container
// waits in CreateContainerConfigError and its start is tried again, and the
// pod does not fail. An empty result means no subPath. A static subPath
// that is not relative is refused before, by Check (checkMount), as the API
// server refuses it.
func ExpandSubPath(m *v1.VolumeMount, vars Vars) (string, error) {
	var missing []string
	sub := expand(m.SubPathExpr, func(name string) (string, bool) {
		val, ok := vars[name]
		if (!ok || val == "") && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return val, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", runtime.ConfigErrorf("missing value for %s", strings.Join(missing, ", "))
	}
	if sub == "" {
		return "", nil
	}
	if path.IsAbs(sub) {
		return "", runtime.ConfigErrorf("error SubPath `%s` must not be an absolute path", sub)
	}
	if err := hostfs.CheckSubPath(sub); err != nil {
		return "", runtime.ConfigError(fmt.Errorf("unable to provision SubPath `%s`: %w", sub, err))
	}
	return sub, nil
}
