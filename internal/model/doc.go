// Package model is podward's view of a pod: the Kubernetes v1.Pod plus the
// defer containers carried in an annotation, how manifests are decoded, and
// how a pod is validated before anything of it starts.
//
// Decode reads manifests (strictly), Default fills in what the API server
// would, and Validate applies Kubernetes' pod validation plus the rules for
// defer containers. DecodeManifest reads the ConfigMaps and Secrets a file
// may hold beside its pods (objects.go), validated there as the API server
// validates them (ValidateConfigMap, ValidateSecret and their updates).
//
// It imports only the Kubernetes API types, apimachinery and k8s.io/utils
// helpers, and the Kubernetes YAML and JSON decoders (sigs.k8s.io/yaml,
// sigs.k8s.io/json); every other package may import it.
package model
