package objects

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// Refs lists the objects pod references, each once, sorted: the
// ConfigMaps and Secrets of its volumes (configMap, secret and projected
// sources), of its containers' env and envFrom (every container: init,
// regular, ephemeral and defer), and its imagePullSecrets.
func Refs(pod *model.Pod) []Ref {
	var refs []Ref
	add := func(kind Kind, name string) {
		if name != "" {
			refs = append(refs, Ref{Kind: kind, Namespace: pod.Namespace, Name: name})
		}
	}
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.ConfigMap != nil:
			add(KindConfigMap, vol.ConfigMap.Name)
		case vol.Secret != nil:
			add(KindSecret, vol.Secret.SecretName)
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				if src.ConfigMap != nil {
					add(KindConfigMap, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(KindSecret, src.Secret.Name)
				}
			}
		}
	}
	for _, ref := range pod.Containers() {
		c := pod.Container(ref)
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				add(KindConfigMap, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add(KindSecret, from.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			envRefs(e.ValueFrom, add)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(KindSecret, s.Name)
	}
	slices.SortFunc(refs, compare)
	return slices.Compact(refs)
}

func envRefs(from *v1.EnvVarSource, add func(Kind, string)) {
	if from == nil {
		return
	}
	if from.ConfigMapKeyRef != nil {
		add(KindConfigMap, from.ConfigMapKeyRef.Name)
	}
	if from.SecretKeyRef != nil {
		add(KindSecret, from.SecretKeyRef.Name)
	}
}

func compare(a, b Ref) int {
	for _, c := range [][2]string{{string(a.Kind), string(b.Kind)}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// References says whether pod references ref.
func References(pod *model.Pod, ref Ref) bool {
	_, found := slices.BinarySearchFunc(Refs(pod), ref, compare)
	return found
}
