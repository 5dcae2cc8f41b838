// Package model is podward's view of a pod: the Kubernetes v1.Pod plus the
// defer containers carried in an annotation, how manifests are decoded, and
// how a pod is validated before anything of it starts.
//
// It imports only the Kubernetes API types and apimachinery helpers; every
// other package may import it.
package model
