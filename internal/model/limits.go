package model

import (
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits below keep a manifest from costing the node more than a pod
// Kubernetes could hold. Each is no stricter than the Kubernetes API
// server: podward refuses nothing a cluster would run.

// MaxManifestBytes bounds a manifest, read before anything of it is
// decoded: a file or stdin given to the CLI (run, apply), a static pod
// file, and the body of an API request. It is the Kubernetes API server's
// limit on a JSON or YAML request body, 3 MiB (k8s.io/apiserver's
// MaxRequestBodyBytes: twice etcd's 1.5 MiB limit on a stored object, as
// a body in JSON is larger than the object it stores). kubectl reads files
// of any size but sends each document in a request of its own, which the
// API server refuses beyond that; podward bounds the whole file, so a
// bigger manifest of many pods has to be split.
const MaxManifestBytes = 3 << 20

// MaxContainers bounds the containers of one pod, init, regular and defer
// containers together. No pod Kubernetes can store has more: etcd refuses
// an object over 1.5 MiB (its --max-request-bytes), and the smallest valid
// container takes 37 bytes of it in protobuf (a 1-character name and
// image, terminationMessagePolicy File, imagePullPolicy Never, the fields
// an encoded container always carries, and its framing in the list) — at
// most 42,509 containers — while defer containers live in an annotation,
// where each takes at least 25 bytes of JSON and all annotations together
// at most 256 KiB. That makes at most 10,485 + 35,425 = 45,910 containers
// in a pod the API server accepts; MaxContainers rounds it up.
// TestMaxContainersHoldsEveryStorablePod checks the arithmetic.
const MaxContainers = 50_000

// ErrManifestTooLarge is matched (errors.Is) by the error ReadManifest
// returns for input over MaxManifestBytes.
var ErrManifestTooLarge = errors.New("manifest too large")

// ReadManifest reads r to its end, but no further than MaxManifestBytes:
// larger input is refused before any of it is decoded, with an error that
// matches ErrManifestTooLarge and says the limit. It reads at most one byte
// past the limit.
func ReadManifest(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: more than 3 MiB (%d bytes), the Kubernetes API server's limit on a request body", ErrManifestTooLarge, MaxManifestBytes)
	}
	return data, nil
}

// tooManyContainers reports a pod of more than MaxContainers containers
// (init, regular and defer together) under spec.containers, and says
// whether it did: the containers of such a pod are not checked one by one.
func (v *validator) tooManyContainers() bool {
	n := len(v.pod.Spec.InitContainers) + len(v.pod.Spec.Containers) + len(v.pod.Defer)
	if n <= MaxContainers {
		return false
	}
	v.add(&field.Error{
		Type: field.ErrorTypeTooMany, Field: field.NewPath("spec", "containers").String(), BadValue: n,
		Detail: fmt.Sprintf("must have at most %d containers, init and defer containers included", MaxContainers),
	})
	return true
}
