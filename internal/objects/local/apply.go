package local

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

// Resource is the API resource of a kind: "configmaps" or "secrets".
func Resource(kind objects.Kind) schema.GroupResource {
	if kind == objects.KindSecret {
		return schema.GroupResource{Resource: "secrets"}
	}
	return schema.GroupResource{Resource: "configmaps"}
}

func kindOf(obj model.Object) objects.Kind {
	if obj.Secret != nil {
		return objects.KindSecret
	}
	return objects.KindConfigMap
}

// Apply creates obj (a decoded, validated model.Object, which Apply owns
// from then on), replaces the object of its kind, namespace and name when
// obj differs from it, or does nothing. It returns the object as it is
// now. A change of an immutable object's data is an Invalid error with
// the API server's message; one object more than Options.MaxObjects, or
// data beyond Options.MaxBytes in all, is Forbidden. A change is stored before it is seen, and OnChange is called
// after it.
func (o *Objects) Apply(obj model.Object) (metav1.Object, Result, error) {
	k := key{kindOf(obj), obj.Meta().Namespace, obj.Meta().Name}
	if obj.Secret != nil {
		model.DefaultSecret(obj.Secret)
	}
	o.write.Lock()
	defer o.write.Unlock()
	o.mu.RLock()
	old, exists := o.objs[k]
	count := len(o.objs)
	o.mu.RUnlock()

	if !exists && count >= o.opts.MaxObjects {
		return nil, 0, apierrors.NewForbidden(Resource(k.kind), k.name, fmt.Errorf(
			"podward holds at most %d ConfigMaps and Secrets: delete some first", o.opts.MaxObjects))
	}
	if exists && same(old, obj) {
		return old, Unchanged, nil
	}
	if errs := validate(obj, old); len(errs) > 0 {
		return nil, 0, apierrors.NewInvalid(schema.GroupKind{Kind: string(k.kind)}, k.name, errs)
	}
	total := o.bytes - dataSize(old)
	if obj.Secret != nil {
		total += dataSize(obj.Secret)
	} else {
		total += dataSize(obj.ConfigMap)
	}
	if total > o.opts.MaxBytes {
		return nil, 0, apierrors.NewForbidden(Resource(k.kind), k.name, fmt.Errorf(
			"podward holds at most %d bytes of ConfigMap and Secret data: delete some first", o.opts.MaxBytes))
	}
	cur := o.stamp(obj, old)
	if err := o.persist(cur); err != nil {
		return nil, 0, err
	}
	o.mu.Lock()
	o.objs[k] = cur
	o.mu.Unlock()
	o.bytes = total
	o.changed(k)
	if exists {
		return cur, Configured, nil
	}
	return cur, Created, nil
}

// validate checks obj as the API server checks a create (old nil) or an
// update of old.
func validate(obj model.Object, old metav1.Object) field.ErrorList {
	if obj.Secret != nil {
		return validateSecret(obj.Secret, old)
	}
	return validateConfigMap(obj.ConfigMap, old)
}

func validateSecret(s *v1.Secret, old metav1.Object) field.ErrorList {
	if old == nil {
		return model.ValidateSecret(s)
	}
	return model.ValidateSecretUpdate(s, old.(*v1.Secret))
}

func validateConfigMap(cm *v1.ConfigMap, old metav1.Object) field.ErrorList {
	if old == nil {
		return model.ValidateConfigMap(cm)
	}
	return model.ValidateConfigMapUpdate(cm, old.(*v1.ConfigMap))
}

// stamp fills in what the agent sets of obj: its kind, a UID and creation
// time kept from old (new ones when there is none) and the next
// resourceVersion. Only the writer calls it.
func (o *Objects) stamp(obj model.Object, old metav1.Object) metav1.Object {
	var (
		cur  metav1.Object
		meta = obj.Meta()
	)
	if obj.Secret != nil {
		obj.Secret.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
		cur = obj.Secret
	} else {
		obj.ConfigMap.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		cur = obj.ConfigMap
	}
	meta.ManagedFields, meta.Generation = nil, 0
	if old != nil {
		meta.UID, meta.CreationTimestamp = old.GetUID(), old.GetCreationTimestamp()
	} else {
		meta.UID, meta.CreationTimestamp = uuid.NewUUID(), metav1.NewTime(o.opts.Clock.Now())
	}
	o.rv++
	meta.ResourceVersion = strconv.FormatUint(o.rv, 10)
	return cur
}

// same reports whether obj would leave the stored object cur as it is:
// they differ in nothing but what the agent sets.
func same(cur metav1.Object, obj model.Object) bool {
	switch c := cur.(type) {
	case *v1.Secret:
		return obj.Secret != nil && sameButAgentSet(*c, *obj.Secret, func(s *v1.Secret) (*metav1.TypeMeta, *metav1.ObjectMeta) {
			return &s.TypeMeta, &s.ObjectMeta
		})
	case *v1.ConfigMap:
		return obj.ConfigMap != nil && sameButAgentSet(*c, *obj.ConfigMap, func(cm *v1.ConfigMap) (*metav1.TypeMeta, *metav1.ObjectMeta) {
			return &cm.TypeMeta, &cm.ObjectMeta
		})
	}
	return false
}

// sameButAgentSet reports whether a and b, copies of two objects of one
// type, are equal once their TypeMeta and what the agent sets in their
// ObjectMeta (UID, resourceVersion, creation time, managed fields,
// generation) are cleared; metas returns the two parts of an object.
func sameButAgentSet[T any](a, b T, metas func(*T) (*metav1.TypeMeta, *metav1.ObjectMeta)) bool {
	for _, x := range []*T{&a, &b} {
		tm, m := metas(x)
		*tm = metav1.TypeMeta{}
		m.UID, m.ResourceVersion, m.CreationTimestamp, m.ManagedFields, m.Generation = "", "", metav1.Time{}, nil, 0
	}
	return reflect.DeepEqual(a, b)
}

func (o *Objects) persist(obj metav1.Object) error {
	if o.opts.Store == nil {
		return nil
	}
	switch obj := obj.(type) {
	case *v1.Secret:
		return o.opts.Store.PutSecret(obj)
	case *v1.ConfigMap:
		return o.opts.Store.PutConfigMap(obj)
	}
	return nil
}

func (o *Objects) changed(k key) {
	if o.opts.OnChange != nil {
		o.opts.OnChange(objects.Change{Ref: objects.Ref{Kind: k.kind, Namespace: k.namespace, Name: k.name}})
	}
}

// Delete removes the object and returns it as it was; one that does not
// exist is NotFound.
func (o *Objects) Delete(kind objects.Kind, ns, name string) (metav1.Object, error) {
	k := key{kind, ns, name}
	o.write.Lock()
	defer o.write.Unlock()
	o.mu.RLock()
	old, ok := o.objs[k]
	o.mu.RUnlock()
	if !ok {
		return nil, objects.NotFound(kind, name)
	}
	if st := o.opts.Store; st != nil {
		del := st.DeleteConfigMap
		if kind == objects.KindSecret {
			del = st.DeleteSecret
		}
		if err := del(ns, name); err != nil {
			return nil, err
		}
	}
	o.mu.Lock()
	delete(o.objs, k)
	o.mu.Unlock()
	o.bytes -= dataSize(old)
	o.changed(k)
	return old, nil
}

// Get returns the object; one that does not exist is NotFound.
func (o *Objects) Get(kind objects.Kind, ns, name string) (metav1.Object, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if obj, ok := o.objs[key{kind, ns, name}]; ok {
		return obj, nil
	}
	return nil, objects.NotFound(kind, name)
}

// List returns the objects of kind in ns ("" for all namespaces), by
// namespace and name.
func (o *Objects) List(kind objects.Kind, ns string) []metav1.Object {
	o.mu.RLock()
	var out []metav1.Object
	for k, obj := range o.objs {
		if k.kind == kind && (ns == "" || k.namespace == ns) {
			out = append(out, obj)
		}
	}
	o.mu.RUnlock()
	slices.SortFunc(out, func(a, b metav1.Object) int {
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

// ConfigMap implements objects.Getter.
func (o *Objects) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	obj, err := o.Get(objects.KindConfigMap, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// Secret implements objects.Getter.
func (o *Objects) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	obj, err := o.Get(objects.KindSecret, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// dataSize is what an object's data takes: its keys and values (0 for
// none).
func dataSize(obj metav1.Object) int64 {
	var n int
	switch o := obj.(type) {
	case *v1.Secret:
		for k, v := range o.Data {
			n += len(k) + len(v)
		}
	case *v1.ConfigMap:
		for k, v := range o.Data {
			n += len(k) + len(v)
		}
		for k, v := range o.BinaryData {
			n += len(k) + len(v)
		}
	}
	return int64(n)
}
