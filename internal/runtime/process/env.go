package process

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// defaultPath is the PATH of a container whose spec sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// localIP stands for the pod's and the host's IP: a process runtime pod
// shares the host's network, and loopback is the address that always works.
const localIP = "127.0.0.1"

// expand replaces the Kubernetes variable references $(NAME) in s with
// lookup's value, the way Kubernetes expands command, args and env values:
// "$$" is an escaped "$", a reference to an unknown variable and an
// unterminated "$(" are kept as written, and a "$" before anything else is
// kept as it is.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// Unterminated: "$(" is literal, the rest is read on.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// containerEnv is the environment of a container: the default PATH and
// HOSTNAME, overridden by the spec's env. vars holds only the spec's
// variables, which are what $(VAR) references in command, args and
// subPathExpr may use, as in Kubernetes. path is the container's field path
// for error messages, such as "spec.containers[0]".
func containerEnv(pod *model.Pod, c *v1.Container, path string) (env []string, vars map[string]string, err error) {
	if len(c.EnvFrom) > 0 {
		return nil, nil, runtime.Unsupported("%s.envFrom: Unsupported value: the process runtime has no ConfigMaps or Secrets to read", path)
	}
	vars = make(map[string]string, len(c.Env))
	lookup := func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
	names := []string{"PATH", "HOSTNAME"}
	values := map[string]string{"PATH": defaultPath, "HOSTNAME": pod.Name}
	for i, e := range c.Env {
		var v string
		if e.ValueFrom != nil {
			v, err = valueFrom(pod, e.ValueFrom, fmt.Sprintf("%s.env[%d].valueFrom", path, i))
			if err != nil {
				return nil, nil, err
			}
		} else {
			// A value may refer to the variables defined before it.
			v = expand(e.Value, lookup)
		}
		vars[e.Name] = v
		if _, seen := values[e.Name]; !seen {
			names = append(names, e.Name)
		}
		values[e.Name] = v
	}
	env = make([]string, 0, len(names))
	for _, n := range names {
		env = append(env, n+"="+values[n])
	}
	return env, vars, nil
}

// valueFrom resolves an env var's source. Only the fieldRef paths that make
// sense without an API server are supported.
func valueFrom(pod *model.Pod, src *v1.EnvVarSource, path string) (string, error) {
	if src.FieldRef == nil {
		return "", runtime.Unsupported("%s: Unsupported value: the process runtime supports only fieldRef", path)
	}
	field := src.FieldRef.FieldPath
	if v, ok := pod.FieldRef(field, localIP, localIP); ok {
		return v, nil
	}
	return "", runtime.Unsupported("%s.fieldRef.fieldPath: Unsupported value: %q is not supported by the process runtime", path, field)
}
