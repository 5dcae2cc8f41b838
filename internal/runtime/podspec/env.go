package podspec

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime"
)

// EnvVar is one variable of a container's environment.
type EnvVar struct {
	Name, Value string
}

// Addresses are what the downward API's status.hostIP(s) and
// status.podIP(s) resolve to for a container. PodIPs, when set, are all
// the pod's addresses, the primary (PodIP) first: status.podIPs is
// them joined by commas, as the kubelet gives it; PodIP alone otherwise.
type Addresses struct {
	HostIP, PodIP string
	PodIPs        []string
}

// EnvSources is what a container's environment is read from besides its
// pod's spec.
type EnvSources struct {
	// Objects reads the ConfigMaps and Secrets of envFrom,
	// configMapKeyRef and secretKeyRef; nil: there are none, and a
	// reference to one is a reference to an object that does not exist.
	Objects objects.Getter
	// Services lists the Services whose links the container sees
	// (ServiceEnv); nil: there are none, and it sees no service variable
	// at all, as under a kubelet without an API server.
	Services objects.ServiceLister
	// Allocatable is the machine's allocatable resources: a resourceFieldRef
	// to a limit the container does not set reads it (or the pod's own
	// limit, when it sets pod-level ones), as the kubelet's
	// defaultPodLimitsForDownwardAPI does.
	Allocatable v1.ResourceList
	// Addresses are the IPs of the downward API's status fields.
	Addresses Addresses
	// Warn, when set, is told what the pod's owner should see of the
	// environment without it failing (ReasonInvalidEnvNames): the caller
	// records it as a Warning event of the pod.
	Warn func(reason, message string)
}

// ReasonInvalidEnvNames is the reason of the warning, and the kubelet's
// event, that an envFrom source had keys that are no variable names.
const ReasonInvalidEnvNames = "InvalidEnvironmentVariableNames"

// Env is the environment a container's spec writes, as the kubelet makes
// it (makeEnvironmentVariables). The pod's service links (ServiceEnv,
// through src.Services) are its base: the container's own variables
// replace them, and its $(VAR) references see them. Then the variables
// of each envFrom source in turn (a source's keys in sorted order, each
// with the source's prefix; a key that is no variable name under the
// relaxed rule, any printable ASCII but '=', is skipped with a Warn),
// then env in spec order. A later variable of a name already set replaces
// its value in place. A value may refer to the variables set before it,
// $(VAR); a valueFrom is a fieldRef (model.Pod.FieldRef), a
// resourceFieldRef (ResourceValue), a configMapKeyRef or a secretKeyRef.
// env is the container's own variables, then the service links it did not
// set (in ServiceEnv's order), as the kubelet appends the remaining ones.
// vars are the same variables by name, for the $(VAR) references in
// command, args and subPathExpr.
//
// An object or key a container needs that is not there, or that cannot be
// read, is a runtime.ContainerConfigError with the kubelet's message
// (`configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`);
// an optional one is left out (its variable is not set). Services not
// read within ServicesSyncWait (static pods do not wait), or that cannot
// be listed, are a ContainerConfigError too, with the kubelet's messages.
// What no runtime can give (CheckEnv) wraps runtime.ErrUnsupported. When
// ctx ends, its error is returned. path is the container's field path for
// the messages, such as "spec.containers[0]". The caller owns the
// results; a runtime adds its own defaults.
func Env(ctx context.Context, pod *model.Pod, c *v1.Container, path string, src EnvSources) (env []EnvVar, vars Vars, err error) {
	if err := CheckEnv(c, path); err != nil {
		return nil, nil, err
	}
	r := &envReader{ctx: ctx, pod: pod, src: src}
	services, err := r.serviceEnv()
	if err != nil {
		return nil, nil, err
	}
	l := newEnvList(len(c.Env) + len(services))
	l.under(services)
	for i := range c.EnvFrom {
		if err := r.envFrom(&c.EnvFrom[i], l); err != nil {
			return nil, nil, err
		}
	}
	for i := range c.Env {
		e := &c.Env[i]
		if e.ValueFrom == nil {
			l.set(e.Name, l.vars.Expand(e.Value))
			continue
		}
		v, ok, err := r.valueFrom(c, e.ValueFrom, fmt.Sprintf("%s.env[%d].valueFrom", path, i))
		if err != nil {
			return nil, nil, err
		}
		if ok {
			l.set(e.Name, v)
		}
	}
	l.appendUnder(services)
	return l.env, l.vars, nil
}

// CheckEnv refuses the env sources no podward runtime can read: a
// fileKeyRef, and a fieldRef path model.Pod.FieldRef does not resolve. Its
// error wraps runtime.ErrUnsupported and names the field. It reads no
// object.
func CheckEnv(c *v1.Container, path string) error {
	probe := &model.Pod{Pod: &v1.Pod{}}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		p := fmt.Sprintf("%s.env[%d].valueFrom", path, i)
		if from.FileKeyRef != nil {
			return runtime.Unsupported("%s.fileKeyRef: Unsupported value: podward does not read environment variables from files", p)
		}
		if from.FieldRef != nil {
			if _, ok := probe.FieldRef(from.FieldRef.FieldPath, "", ""); !ok {
				return runtime.Unsupported("%s.fieldRef.fieldPath: Unsupported value: %q is not supported by podward", p, from.FieldRef.FieldPath)
			}
		}
	}
	return nil
}

// envList is an environment being built: its variables in order, and by
// name. vars also holds the variables under it (under), which references
// see until a variable of the same name is set.
type envList struct {
	env  []EnvVar
	vars Vars
	pos  map[string]int
}

func newEnvList(n int) *envList {
	return &envList{env: make([]EnvVar, 0, n), vars: make(Vars, n), pos: make(map[string]int, n)}
}

// set sets name to value: in place when name is set already, last
// otherwise.
func (l *envList) set(name, value string) {
	l.vars[name] = value
	if j, ok := l.pos[name]; ok {
		l.env[j].Value = value
		return
	}
	l.pos[name] = len(l.env)
	l.env = append(l.env, EnvVar{Name: name, Value: value})
}

// under makes env the variables under l's: $(VAR) references see them,
// until set replaces them.
func (l *envList) under(env []EnvVar) {
	for _, e := range env {
		l.vars[e.Name] = e.Value
	}
}

// appendUnder appends the variables of env that l has not set, in order.
func (l *envList) appendUnder(env []EnvVar) {
	for _, e := range env {
		if _, ok := l.pos[e.Name]; !ok {
			l.pos[e.Name] = len(l.env)
			l.env = append(l.env, e)
		}
	}
}

// envReader reads the sources of one container's environment.
type envReader struct {
	ctx context.Context
	pod *model.Pod
	src EnvSources
}

// valueFrom resolves an env var's source; ok is false when an optional
// object or key is missing, and the variable is then not set.
func (r *envReader) valueFrom(c *v1.Container, from *v1.EnvVarSource, path string) (value string, ok bool, err error) {
	switch {
	case from.FieldRef != nil:
		a := r.src.Addresses
		if from.FieldRef.FieldPath == "status.podIPs" && len(a.PodIPs) > 0 {
			return strings.Join(a.PodIPs, ","), true, nil
		}
		v, _ := r.pod.FieldRef(from.FieldRef.FieldPath, a.HostIP, a.PodIP) // CheckEnv: known
		return v, true, nil
	case from.ResourceFieldRef != nil:
		v, err := ResourceValue(r.pod, c, from.ResourceFieldRef, r.src.Allocatable)
		if err != nil {
			return "", false, fmt.Errorf("%s.resourceFieldRef: %w", path, err)
		}
		return v, true, nil
	case from.ConfigMapKeyRef != nil:
		return r.configMapKey(from.ConfigMapKeyRef)
	case from.SecretKeyRef != nil:
		return r.secretKey(from.SecretKeyRef)
	}
	return "", false, runtime.Unsupported("%s: Unsupported value: no source podward knows", path)
}
