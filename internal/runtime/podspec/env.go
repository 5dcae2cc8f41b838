package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// EnvVar is one variable of a container's environment.
type EnvVar struct {
	Name, Value string
}

// Addresses are what the downward API's status.hostIP(s) and
// status.podIP(s) resolve to for a container.
type Addresses struct {
	HostIP, PodIP string
}

// Env is the environment a container's spec writes: its env, in spec
// order, a later variable of the same name replacing the earlier one's
// value in place. A value may refer to the variables defined before it,
// $(VAR); a valueFrom may only be a fieldRef that model.Pod.FieldRef
// resolves (with addrs for the IPs). vars are the same variables by name,
// for the $(VAR) references in command, args and subPathExpr. envFrom is
// refused: podward reads no ConfigMaps or Secrets. path is the container's
// field path for the messages, such as "spec.containers[0]". The caller
// owns the results; a runtime adds its own defaults.
func Env(pod *model.Pod, c *v1.Container, path string, addrs Addresses) (env []EnvVar, vars Vars, err error) {
	if len(c.EnvFrom) > 0 {
		return nil, nil, runtime.Unsupported("%s.envFrom: Unsupported value: podward has no ConfigMaps or Secrets to read", path)
	}
	vars = make(Vars, len(c.Env))
	env = make([]EnvVar, 0, len(c.Env))
	pos := make(map[string]int, len(c.Env))
	for i, e := range c.Env {
		var v string
		if e.ValueFrom != nil {
			if v, err = valueFrom(pod, e.ValueFrom, fmt.Sprintf("%s.env[%d].valueFrom", path, i), addrs); err != nil {
				return nil, nil, err
			}
		} else {
			v = vars.Expand(e.Value)
		}
		vars[e.Name] = v
		if j, ok := pos[e.Name]; ok {
			env[j].Value = v
			continue
		}
		pos[e.Name] = len(env)
		env = append(env, EnvVar{Name: e.Name, Value: v})
	}
	return env, vars, nil
}

// valueFrom resolves an env var's source: only the fieldRef paths that make
// sense without an API server.
func valueFrom(pod *model.Pod, src *v1.EnvVarSource, path string, addrs Addresses) (string, error) {
	if src.FieldRef == nil {
		return "", runtime.Unsupported("%s: Unsupported value: podward supports only fieldRef", path)
	}
	field := src.FieldRef.FieldPath
	if v, ok := pod.FieldRef(field, addrs.HostIP, addrs.PodIP); ok {
		return v, nil
	}
	return "", runtime.Unsupported("%s.fieldRef.fieldPath: Unsupported value: %q is not supported by podward", path, field)
}
