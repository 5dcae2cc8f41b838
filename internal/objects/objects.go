// Package objects is what a pod reads besides its own spec: the ConfigMaps
// and Secrets of its namespace, and the service account tokens minted for
// it, and the Services whose links its containers see. It declares how
// podward reads them (Getter, Tokens, ServiceLister), how the readers
// learn which pods reference what (Registrar) and how news of a change
// travels (Change), and it lists what a pod references (Refs).
//
// Two sides implement it: standalone, the agent's own store of the objects
// applied to it (internal/objects/local; no tokens, since nothing there can
// mint one, and no Services); as a node, the cluster's managers, which read the referenced
// objects from the API server, request tokens from it and keep its Services
// (internal/clusterobjects). The runtimes read through it when they write a pod's
// volumes and its containers' environment.
package objects

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
)

// Kind is the kind of a referenced object.
type Kind string

// The kinds a pod references.
const (
	KindConfigMap Kind = "ConfigMap"
	KindSecret    Kind = "Secret"
)

// Ref names one object a pod references.
type Ref struct {
	Kind            Kind
	Namespace, Name string
}

func (r Ref) String() string { return string(r.Kind) + " " + r.Namespace + "/" + r.Name }

// Getter reads the objects pods reference. The objects returned are
// shared: callers must not modify them. An object that does not exist is
// an error for which apierrors.IsNotFound holds, with the kubelet's
// message (NotFound). ctx bounds a read that has to wait (a cluster's
// first read of an object); a cached value never waits.
type Getter interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// GetConfigMap reads the ConfigMap namespace/name through g, as
// g.ConfigMap does; with no g (nothing holds objects) no ConfigMap
// exists: the error is NotFound's.
func GetConfigMap(ctx context.Context, g Getter, namespace, name string) (*v1.ConfigMap, error) {
	if g == nil {
		return nil, NotFound(KindConfigMap, name)
	}
	return g.ConfigMap(ctx, namespace, name)
}

// GetSecret is GetConfigMap for a Secret.
func GetSecret(ctx context.Context, g Getter, namespace, name string) (*v1.Secret, error) {
	if g == nil {
		return nil, NotFound(KindSecret, name)
	}
	return g.Secret(ctx, namespace, name)
}

// MissingOptional reports whether err, a Getter's, is of an object that
// does not exist where the pod's reference to it is optional: the kubelet
// then goes on without it (an env source, a volume's files).
func MissingOptional(err error, optional *bool) bool {
	return apierrors.IsNotFound(err) && optional != nil && *optional
}

// Registrar is the optional side of a Getter that needs to know which pods
// reference what, as the kubelet's managers do (RegisterPod,
// UnregisterPod): a cluster's getter watches exactly the objects of the
// pods registered, which is all the Node authorizer lets a node read. The
// agent registers a pod before its worker starts and again on each update
// of its spec, and unregisters it once the pod is removed.
type Registrar interface {
	RegisterPod(pod *model.Pod)
	UnregisterPod(pod *model.Pod)
}

// TokenRequest asks for a service account token bound to a pod, as a
// projected volume's serviceAccountToken source does.
type TokenRequest struct {
	// Pod is the pod the token is bound to (boundObjectRef), in whose
	// namespace ServiceAccount is.
	Pod            *model.Pod
	ServiceAccount string
	// Audience is the token's audience, "" for the API server's own.
	Audience string
	// ExpirationSeconds is the lifetime asked for.
	ExpirationSeconds int64
	// Current is the token the pod's volume holds now, "" when none: a
	// Tokens returns it again while it is fresh, so that a restarted agent
	// does not request anew the tokens it wrote before.
	Current string
}

// Token is a minted token and when it expires.
type Token struct {
	Token   string
	Expires time.Time
}

// Tokens mints service account tokens for pods (the kubelet's token
// manager). It refreshes a token it handed out once the token is past 80 %
// of its lifetime or older than 24 hours, and says so with a Change for
// the pod, whose volumes are then written again.
type Tokens interface {
	Token(ctx context.Context, req TokenRequest) (Token, error)
	// ForgetPod drops what is kept for the pod: it is gone.
	ForgetPod(uid types.UID)
}

// Change is news that what pods read changed: the object Ref was created,
// updated or deleted, or, when PodUID is set, a token of that pod is due
// for its refresh. Whoever implements a Getter or Tokens is given a
// func(Change) to call, which must not block.
type Change struct {
	Ref    Ref
	PodUID types.UID
}

// NotFound is the error of a Getter for an object that does not exist,
// the kubelet's: `configmap "name" not found`, `secret "name" not found`.
func NotFound(kind Kind, name string) error {
	resource := "configmap"
	if kind == KindSecret {
		resource = "secret"
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}
