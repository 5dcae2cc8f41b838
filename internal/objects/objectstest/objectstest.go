// Package objectstest is an objects.Getter and objects.Tokens in memory,
// for the unit tests of what reads through them.
package objectstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/objects"
)

// Objects holds ConfigMaps and Secrets by namespace and name, and mints
// tokens "token-<n>" that expire TokenLifetime after Now (when set).
// Its zero value is empty and ready; it is safe for concurrent use.
type Objects struct {
	mu         sync.Mutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	// Requests are the token requests made, in order.
	Requests []objects.TokenRequest
	// Now and TokenLifetime date the tokens minted.
	Now           func() time.Time
	TokenLifetime time.Duration
	// TokenErr, when set, fails every token request.
	TokenErr error
}

var (
	_ objects.Getter = (*Objects)(nil)
	_ objects.Tokens = (*Objects)(nil)
)

func key(ns, name string) string { return ns + "/" + name }

// Put adds or replaces ConfigMaps and Secrets.
func (o *Objects) Put(objs ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.configMaps == nil {
		o.configMaps, o.secrets = map[string]*v1.ConfigMap{}, map[string]*v1.Secret{}
	}
	for _, obj := range objs {
		switch obj := obj.(type) {
		case *v1.ConfigMap:
			o.configMaps[key(obj.Namespace, obj.Name)] = obj
		case *v1.Secret:
			o.secrets[key(obj.Namespace, obj.Name)] = obj
		default:
			panic(fmt.Sprintf("objectstest: cannot hold a %T", obj))
		}
	}
}

// Delete removes the object ref.
func (o *Objects) Delete(ref objects.Ref) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ref.Kind == objects.KindSecret {
		delete(o.secrets, key(ref.Namespace, ref.Name))
		return
	}
	delete(o.configMaps, key(ref.Namespace, ref.Name))
}

// ConfigMap implements objects.Getter.
func (o *Objects) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cm, ok := o.configMaps[key(ns, name)]; ok {
		return cm, nil
	}
	return nil, objects.NotFound(objects.KindConfigMap, name)
}

// Secret implements objects.Getter.
func (o *Objects) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.secrets[key(ns, name)]; ok {
		return s, nil
	}
	return nil, objects.NotFound(objects.KindSecret, name)
}

// Token implements objects.Tokens: it returns req.Current when set, and
// mints a new token otherwise.
func (o *Objects) Token(_ context.Context, req objects.TokenRequest) (objects.Token, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Requests = append(o.Requests, req)
	if o.TokenErr != nil {
		return objects.Token{}, o.TokenErr
	}
	var expires time.Time
	if o.Now != nil {
		expires = o.Now().Add(o.TokenLifetime)
	}
	if req.Current != "" {
		return objects.Token{Token: req.Current, Expires: expires}, nil
	}
	return objects.Token{Token: fmt.Sprintf("token-%d", len(o.Requests)), Expires: expires}, nil
}

// ForgetPod implements objects.Tokens.
func (o *Objects) ForgetPod(types.UID) {}
