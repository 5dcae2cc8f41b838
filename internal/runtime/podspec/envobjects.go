package podspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime"
)

// configMap reads the ConfigMap name of the pod's namespace.
func (r *envReader) configMap(name string) (*v1.ConfigMap, error) {
	return objects.GetConfigMap(r.ctx, r.src.Objects, r.pod.Namespace, name)
}

// secret reads the Secret name of the pod's namespace.
func (r *envReader) secret(name string) (*v1.Secret, error) {
	return objects.GetSecret(r.ctx, r.src.Objects, r.pod.Namespace, name)
}

// readFailed is the error of an object that could not be read: nil when it
// does not exist and is optional (skip it), ctx's error when ctx ended, a
// ContainerConfigError with the Getter's message (the kubelet's for a
// missing object) otherwise.
func (r *envReader) readFailed(err error, optional *bool) error {
	if objects.MissingOptional(err, optional) {
		return nil
	}
	if ctxErr := r.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return runtime.ConfigError(err)
}

// configMapKey is the value of a configMapKeyRef (its ConfigMap's data,
// not binaryData, as the kubelet's).
func (r *envReader) configMapKey(ref *v1.ConfigMapKeySelector) (string, bool, error) {
	cm, err := r.configMap(ref.Name)
	if err != nil {
		return "", false, r.readFailed(err, ref.Optional)
	}
	v, ok := cm.Data[ref.Key]
	if !ok && !isTrue(ref.Optional) {
		return "", false, runtime.ConfigErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	}
	return v, ok, nil
}

// secretKey is the value of a secretKeyRef.
func (r *envReader) secretKey(ref *v1.SecretKeySelector) (string, bool, error) {
	s, err := r.secret(ref.Name)
	if err != nil {
		return "", false, r.readFailed(err, ref.Optional)
	}
	v, ok := s.Data[ref.Key]
	if !ok && !isTrue(ref.Optional) {
		return "", false, runtime.ConfigErrorf("couldn't find key %s in Secret %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	}
	return string(v), ok, nil
}

// envFrom sets the variables of one envFrom source on l: each key of the
// object's data (a ConfigMap's data, not binaryData), in sorted order,
// with the source's prefix. A key that is no variable name under
// Kubernetes' relaxed rule (RelaxedEnvironmentVariableValidation, GA in
// 1.34: printable ASCII but '=') is skipped, and the skipped keys are
// told to Warn in one message, the kubelet's event.
func (r *envReader) envFrom(src *v1.EnvFromSource, l *envList) error {
	var (
		data       map[string]string
		kind, name string
	)
	switch {
	case src.ConfigMapRef != nil:
		kind, name = "configMap", src.ConfigMapRef.Name
		cm, err := r.configMap(name)
		if err != nil {
			return r.readFailed(err, src.ConfigMapRef.Optional)
		}
		data = cm.Data
	case src.SecretRef != nil:
		kind, name = "secret", src.SecretRef.Name
		s, err := r.secret(name)
		if err != nil {
			return r.readFailed(err, src.SecretRef.Optional)
		}
		data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
	default:
		return nil // validation: one of them is set
	}
	var invalid []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		v := data[k]
		k = src.Prefix + k
		if len(validation.IsRelaxedEnvVarName(k)) != 0 {
			invalid = append(invalid, k)
			continue
		}
		l.set(k, v)
	}
	if len(invalid) > 0 && r.src.Warn != nil {
		r.src.Warn(ReasonInvalidEnvNames, fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(invalid, ", "), kind, r.pod.Namespace, name))
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }
