package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// MaxObjectDataBytes bounds the data of one ConfigMap or Secret, all keys
// together: the API server's MaxSecretSize, 1 MiB.
const MaxObjectDataBytes = 1 << 20

// immutableMsg is the API server's detail for a change of an immutable
// object's data.
const immutableMsg = "field is immutable when `immutable` is set"

// Manifest is what a file of objects holds: its pods, ConfigMaps and
// Secrets, each kind in the order of the file.
type Manifest struct {
	Pods    []Document
	Objects []Object
}

// Object is one ConfigMap or Secret of a manifest (exactly one of the two
// is set), decoded, defaulted (its namespace "default" when it has none, a
// Secret's type Opaque, its stringData merged into data) and validated as
// the API server validates it.
type Object struct {
	ConfigMap *v1.ConfigMap
	Secret    *v1.Secret
	// Namespace is the document's metadata.namespace, "" when it has
	// none: the CLI's -n then gives it one.
	Namespace string
	// doc is the object's document (1-based; 0 in a single-document
	// input), for DecodeDocuments' refusal.
	doc int
}

// Kind is "ConfigMap" or "Secret".
func (o Object) Kind() string {
	if o.Secret != nil {
		return "Secret"
	}
	return "ConfigMap"
}

// Meta is the object's metadata.
func (o Object) Meta() *metav1.ObjectMeta {
	if o.Secret != nil {
		return &o.Secret.ObjectMeta
	}
	return &o.ConfigMap.ObjectMeta
}

// SetNamespace sets the namespace of the object.
func (o Object) SetNamespace(ns string) { o.Meta().Namespace = ns }

// DecodeManifest reads the pods, ConfigMaps and Secrets of one or more
// YAML documents or concatenated JSON objects, as DecodeDocuments reads
// pods; a document may also be a "kind: List" of them. ConfigMaps and
// Secrets are validated here, as the API server validates them (pods are
// validated by Validate). The order of the documents does not matter to
// anything but the order of the result. On error nothing is returned and
// the error lists every problem, as DecodeDocuments'.
func DecodeManifest(data []byte) (*Manifest, error) {
	return decodeManifest(data)
}

// decodeItems decodes one document into m: a pod, a ConfigMap, a Secret,
// or a List of them whose problems are named "items[i]".
func decodeItems(js []byte, m *Manifest, doc int) []*manifestError {
	tm, problems := decodeObjectOrPod(js, m, doc)
	if tm == nil {
		return problems
	}
	if tm.APIVersion != "v1" {
		return []*manifestError{{msg: fmt.Sprintf("apiVersion %q is not supported: a List is \"apiVersion: v1\"", tm.APIVersion)}}
	}
	var list struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata,omitempty"`
		Items           []json.RawMessage `json:"items"`
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, &list)
	if err != nil {
		return []*manifestError{{msg: err.Error(), cause: err}}
	}
	for _, strictErr := range strictErrs {
		problems = append(problems, strictProblem("", strictErr))
	}
	for i, item := range list.Items {
		prefix := fmt.Sprintf("items[%d]: ", i)
		itm, itemProblems := decodeObjectOrPod(item, m, doc)
		if itm != nil {
			itemProblems = []*manifestError{{msg: "a List may not hold a List"}}
		}
		for _, p := range itemProblems {
			p.msg = prefix + p.msg
			problems = append(problems, p)
		}
	}
	return problems
}

// isOtherKind says whether a kind is one podward takes besides Pod.
func isOtherKind(kind string) bool {
	return kind == "ConfigMap" || kind == "Secret" || kind == "List"
}

// decodeObjectOrPod decodes one object into m: a pod, a ConfigMap or a Secret. A
// List is not decoded: its apiVersion and kind are returned.
func decodeObjectOrPod(js []byte, m *Manifest, doc int) (*metav1.TypeMeta, []*manifestError) {
	pod, problems, other := decodePod(js)
	switch {
	case other == nil:
		if len(problems) == 0 {
			m.Pods = append(m.Pods, pod)
		}
		return nil, problems
	case other.Kind == "List":
		return other, nil
	}
	if problems := checkObjectTypeMeta(*other); len(problems) > 0 {
		return nil, problems
	}
	obj, problems := decodeObject(js, other.Kind)
	if len(problems) == 0 {
		obj.doc = doc
		m.Objects = append(m.Objects, obj)
	}
	return nil, problems
}

func checkObjectTypeMeta(tm metav1.TypeMeta) []*manifestError {
	switch tm.APIVersion {
	case "v1":
		return nil
	case "":
		return []*manifestError{{msg: fmt.Sprintf("apiVersion is missing: a %s is \"apiVersion: v1\"", tm.Kind)}}
	default:
		return []*manifestError{{msg: fmt.Sprintf("apiVersion %q is not supported: a %s is \"apiVersion: v1\"", tm.APIVersion, tm.Kind)}}
	}
}

// decodeObject strictly decodes a ConfigMap or Secret, defaults and
// validates it.
func decodeObject(js []byte, kind string) (Object, []*manifestError) {
	var (
		obj    Object
		target any
	)
	if kind == "Secret" {
		obj.Secret = &v1.Secret{}
		target = obj.Secret
	} else {
		obj.ConfigMap = &v1.ConfigMap{}
		target = obj.ConfigMap
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, target)
	if err != nil {
		return Object{}, []*manifestError{{msg: err.Error(), cause: err}}
	}
	var problems []*manifestError
	for _, strictErr := range strictErrs {
		problems = append(problems, strictProblem("", strictErr))
	}
	if len(problems) > 0 {
		return Object{}, problems
	}
	obj.Namespace = obj.Meta().Namespace
	if obj.Namespace == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	var errs field.ErrorList
	if obj.Secret != nil {
		DefaultSecret(obj.Secret)
		errs = ValidateSecret(obj.Secret)
	} else {
		errs = ValidateConfigMap(obj.ConfigMap)
	}
	for _, e := range errs {
		problems = append(problems, &manifestError{msg: e.Error(), cause: e})
	}
	if len(problems) > 0 {
		return Object{}, problems
	}
	return obj, nil
}

// DefaultSecret does what the API server does to a Secret it is given:
// stringData is merged into data (its keys win) and dropped, and a Secret
// without a type is Opaque.
func DefaultSecret(s *v1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
}

// ValidateConfigMap validates a ConfigMap as the API server does
// (ValidateConfigMap of k8s.io/kubernetes/pkg/apis/core/validation).
func ValidateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		path := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(path, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(path, key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > MaxObjectDataBytes {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxObjectDataBytes))
	}
	return errs
}

// ValidateSecret validates a defaulted Secret as the API server does
// (ValidateSecret of k8s.io/kubernetes/pkg/apis/core/validation): its
// name, its keys, its size and the keys its type requires.
func ValidateSecret(s *v1.Secret) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > MaxObjectDataBytes {
		errs = append(errs, field.TooLong(dataPath, "", MaxObjectDataBytes))
	}
	return append(errs, validateSecretType(s, dataPath)...)
}

// validateSecretType checks the keys a Secret's type requires.
func validateSecretType(s *v1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	jsonKey := func(key string) {
		raw, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	has := func(key string) bool { _, ok := s.Data[key]; return ok }
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		jsonKey(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		jsonKey(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		if !has(v1.BasicAuthUsernameKey) && !has(v1.BasicAuthPasswordKey) {
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		if len(s.Data[v1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(v1.SSHAuthPrivateKey), ""))
		}
	case v1.SecretTypeTLS:
		for _, key := range []string{v1.TLSCertKey, v1.TLSPrivateKeyKey} {
			if !has(key) {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	return errs
}

// ValidateConfigMapUpdate validates a change of ConfigMap old into cm as
// the API server does: an immutable ConfigMap keeps its data and stays
// immutable.
func ValidateConfigMapUpdate(cm, old *v1.ConfigMap) field.ErrorList {
	return keepImmutable(ValidateConfigMap(cm), old.Immutable, cm.Immutable,
		keptField{"data", reflect.DeepEqual(cm.Data, old.Data)},
		keptField{"binaryData", reflect.DeepEqual(cm.BinaryData, old.BinaryData)})
}

// ValidateSecretUpdate validates a change of Secret old into s as the API
// server does: the type never changes, an immutable Secret keeps its data
// and stays immutable.
func ValidateSecretUpdate(s, old *v1.Secret) field.ErrorList {
	errs := ValidateSecret(s)
	if s.Type != old.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	return keepImmutable(errs, old.Immutable, s.Immutable,
		keptField{"data", reflect.DeepEqual(s.Data, old.Data)})
}

// keptField is a data field of an update and whether the update keeps it.
type keptField struct {
	name string
	kept bool
}

// keepImmutable adds to errs the API server's rule for an update of a
// ConfigMap or Secret that was immutable (wasImmutable): it stays
// immutable and keeps each of its data fields. It returns errs as it is
// for an object that was not immutable.
func keepImmutable(errs field.ErrorList, wasImmutable, immutable *bool, fields ...keptField) field.ErrorList {
	if !isTrue(wasImmutable) {
		return errs
	}
	if !isTrue(immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
	}
	for _, f := range fields {
		if !f.kept {
			errs = append(errs, field.Forbidden(field.NewPath(f.name), immutableMsg))
		}
	}
	return errs
}

func isTrue(b *bool) bool { return b != nil && *b }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
