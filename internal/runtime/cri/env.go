package cri

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// The environment follows the process runtime's rules (package process,
// env.go), less what the image gives here: PATH and HOSTNAME come from the
// image and the CRI runtime, not from podward.

// expandVars replaces the Kubernetes references $(NAME) in s by their value
// in vars: "$$" is a literal "$", and a reference to an unknown variable,
// an empty "$()" or an unterminated "$(" stays as written.
func expandVars(s string, vars map[string]string) string {
	i := strings.IndexByte(s, '$')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "$$"):
			b.WriteByte('$')
			s = rest[2:]
		case strings.HasPrefix(rest, "$("):
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				b.WriteString("$(")
				s = rest[2:]
				break
			}
			if v, ok := vars[rest[2:end]]; ok && end > 2 {
				b.WriteString(v)
			} else {
				b.WriteString(rest[:end+1])
			}
			s = rest[end+1:]
		default:
			b.WriteByte('$')
			s = rest[1:]
		}
		i = strings.IndexByte(s, '$')
	}
	b.WriteString(s)
	return b.String()
}

// containerEnv is the container's env as CRI key/values, in spec order
// (a later duplicate replaces an earlier one in place), and the variables
// $(VAR) references in command, args and subPathExpr may use. path is the
// container's field path for error messages.
func (r *Runtime) containerEnv(pod *model.Pod, c *v1.Container, path string) ([]*runtimeapi.KeyValue, map[string]string, error) {
	if len(c.EnvFrom) > 0 {
		return nil, nil, runtime.Unsupported("%s.envFrom: Unsupported value: the CRI runtime has no ConfigMaps or Secrets to read", path)
	}
	vars := make(map[string]string, len(c.Env))
	kvs := make([]*runtimeapi.KeyValue, 0, len(c.Env))
	pos := make(map[string]int, len(c.Env))
	for i, e := range c.Env {
		var v string
		if e.ValueFrom != nil {
			var err error
			if v, err = r.envSource(pod, e.ValueFrom, fmt.Sprintf("%s.env[%d].valueFrom", path, i)); err != nil {
				return nil, nil, err
			}
		} else {
			// A value may refer to the variables before it.
			v = expandVars(e.Value, vars)
		}
		vars[e.Name] = v
		if j, ok := pos[e.Name]; ok {
			kvs[j].Value = []byte(v)
			continue
		}
		pos[e.Name] = len(kvs)
		kvs = append(kvs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(v)})
	}
	return kvs, vars, nil
}

// envSource resolves an env var's valueFrom: only the fieldRef paths that
// make sense without an API server.
func (r *Runtime) envSource(pod *model.Pod, src *v1.EnvVarSource, path string) (string, error) {
	if src.FieldRef == nil {
		return "", runtime.Unsupported("%s: Unsupported value: the CRI runtime supports only fieldRef", path)
	}
	field := src.FieldRef.FieldPath
	podIP := r.nodeIP
	if !r.hostNetwork(pod) {
		// The pod's IP is known once its sandbox runs.
		podIP = r.sandboxIP(pod.UID)
	}
	if v, ok := pod.FieldRef(field, r.nodeIP, podIP); ok {
		return v, nil
	}
	return "", runtime.Unsupported("%s.fieldRef.fieldPath: Unsupported value: %q is not supported by the CRI runtime", path, field)
}
