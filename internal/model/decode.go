package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
)

var (
	// ErrInvalidManifest is matched (errors.Is) by every error Decode
	// returns: the input is not something podward can run.
	ErrInvalidManifest = errors.New("invalid pod manifest")
	// ErrNoPods is matched by the error Decode returns for input that holds
	// no document at all (only blanks, comments or "---").
	ErrNoPods = errors.New("no pod manifest in input")
)

// manifestError is one problem with one document of Decode's input.
type manifestError struct {
	doc   int // 1-based; 0 when the input held a single document
	msg   string
	cause error
}

func (e *manifestError) Error() string {
	if e.doc > 0 {
		return fmt.Sprintf("document %d: %s", e.doc, e.msg)
	}
	return e.msg
}

func (e *manifestError) Is(target error) bool { return target == ErrInvalidManifest }

func (e *manifestError) Unwrap() error { return e.cause }

// Decode reads pods from one or more YAML documents separated by "---", or
// from one or more concatenated JSON objects. Empty documents are skipped.
//
// Every document must be a Pod of apiVersion v1. Decoding is strict: an
// unknown or duplicated field is an error naming its path, e.g.
// "spec.containers[0].imagee: unknown field". The defer containers in
// DeferContainersAnnotation are decoded, just as strictly, into Pod.Defer;
// the annotation stays on the pod. Init containers in the legacy
// LegacyInitContainersAnnotation move to spec.initContainers and the
// annotation is removed; setting both is an error.
//
// Each pod is passed through Default but not through Validate. On error no
// pods are returned; the error lists every problem found, one per line,
// each prefixed with "document N: " when the input held several documents,
// and matches ErrInvalidManifest. The returned pods are new and owned by the
// caller.
//
// Decode takes the input as it is: whoever reads it bounds it first
// (ReadManifest, MaxManifestBytes). Decode bounds what a document holds
// before it builds objects of it: a document of an object with more than
// MaxListItems list items is refused, naming the list.
func Decode(data []byte) ([]*Pod, error) {
	docs, err := DecodeDocuments(data)
	if err != nil {
		return nil, err
	}
	pods := make([]*Pod, len(docs))
	for i, d := range docs {
		pods[i] = d.Pod
	}
	return pods, nil
}

// Document is one pod of a manifest as Decode reads it, with what its
// document wrote where Default fills a value in that a caller may set
// itself: the namespace. The CLI's -n and an API request's path give a
// namespace to the pods that have none, and refuse another one.
type Document struct {
	Pod *Pod
	// Namespace is the document's metadata.namespace, "" when it has
	// none (Pod.Namespace is then "default").
	Namespace string
}

// DecodeDocuments is Decode, with the namespace each document wrote, in
// the order of the pods. A ConfigMap or Secret is refused: the caller
// takes pods only (DecodeManifest takes them all).
func DecodeDocuments(data []byte) ([]Document, error) {
	m, err := decodeManifest(data)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, o := range m.Objects {
		errs = append(errs, &manifestError{doc: o.doc, msg: fmt.Sprintf("kind %q is not supported here: Pods only", o.Kind())})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m.Pods, nil
}

// decodeManifest is DecodeManifest.
func decodeManifest(data []byte) (*Manifest, error) {
	docs, isJSON, err := splitDocuments(data)
	if err != nil {
		return nil, err
	}

	type converted struct {
		json []byte
		err  error
	}
	var nonEmpty []converted
	for _, doc := range docs {
		js, err := doc, error(nil)
		if !isJSON {
			// Strict: a key given twice in one mapping is an error.
			js, err = yamlToJSON(doc)
		}
		if err == nil && isEmptyDocument(js) {
			continue
		}
		nonEmpty = append(nonEmpty, converted{json: js, err: err})
	}
	if len(nonEmpty) == 0 {
		return nil, &manifestError{msg: ErrNoPods.Error(), cause: ErrNoPods}
	}

	m := &Manifest{}
	var errs []error
	for i, doc := range nonEmpty {
		index := 0
		if len(nonEmpty) > 1 {
			index = i + 1
		}
		if doc.err != nil {
			// YAML errors span lines; keep one problem per line.
			msg := strings.Join(strings.Fields(doc.err.Error()), " ")
			errs = append(errs, &manifestError{doc: index, msg: msg, cause: doc.err})
			continue
		}
		if problem := checkListItems(doc.json); problem != nil {
			problem.doc = index
			errs = append(errs, problem)
			continue
		}
		for _, problem := range decodeItems(doc.json, m, index) {
			problem.doc = index
			errs = append(errs, problem)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(m.Pods) == 0 && len(m.Objects) == 0 {
		// Only empty Lists.
		return nil, &manifestError{msg: ErrNoPods.Error(), cause: ErrNoPods}
	}
	return m, nil
}

// splitDocuments cuts the input into documents: JSON objects when the input
// starts with "{" (isJSON), YAML documents otherwise.
func splitDocuments(data []byte) (docs [][]byte, isJSON bool, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				return docs, true, nil
			}
			if err != nil {
				return nil, true, &manifestError{msg: fmt.Sprintf("invalid JSON after %d document(s): %v", len(docs), err), cause: err}
			}
			docs = append(docs, raw)
		}
	}

	docs, err = splitYAML(data)
	if err != nil {
		return nil, false, &manifestError{msg: fmt.Sprintf("read YAML: %v", err), cause: err}
	}
	return docs, false, nil
}

// splitYAML cuts YAML into its documents exactly as k8s.io/apimachinery's
// YAMLReader does — a line that starts with "---" ends a document (or
// starts one, and stays in it), and may be followed by blanks and a
// comment only; the last line gets a "\n" — but without copying them:
// each document is a slice of data, but the last when it lacks its "\n".
// Input with a "\r" goes through YAMLReader itself, which rewrites line
// ends.
func splitYAML(data []byte) ([][]byte, error) {
	if bytes.IndexByte(data, '\r') >= 0 {
		return readYAML(data)
	}
	var docs [][]byte
	start := 0 // of the current document
	for at := 0; at < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
			end = at + i + 1
		}
		if rest, ok := bytes.CutPrefix(data[at:end], []byte("---")); ok {
			if rest = bytes.TrimSpace(rest); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			// A separator that starts a document stays in it.
			if at > start {
				docs = append(docs, data[start:at])
				start = end
			}
		}
		at = end
	}
	if start < len(data) {
		last := data[start:]
		if last[len(last)-1] != '\n' {
			last = append(bytes.Clone(last), '\n')
		}
		docs = append(docs, last)
	}
	return docs, nil
}

// readYAML is splitYAML through YAMLReader.
func readYAML(data []byte) ([][]byte, error) {
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// isEmptyDocument reports whether a document converted to JSON holds nothing:
// a YAML document of only blanks and comments converts to "null".
func isEmptyDocument(js []byte) bool {
	js = bytes.TrimSpace(js)
	return len(js) == 0 || string(js) == "null"
}

// decodePod decodes one document, already converted to JSON, into a
// defaulted pod. It returns every problem it finds; the pod is only usable
// when there is none. A document of another kind podward takes (a
// ConfigMap, a Secret, a List) is not a problem: its apiVersion and kind
// are returned as other, for the caller to decode it as what it is.
//
// The document is decoded once, as a pod: one that is not a Pod is then
// reported by its apiVersion and kind alone, never by the fields a Pod
// does not have. Only a document that does not decode as a pod at all is
// read again, for its apiVersion and kind.
func decodePod(js []byte) (doc Document, problems []*manifestError, other *metav1.TypeMeta) {
	js = bytes.TrimSpace(js)
	if js[0] != '{' {
		return Document{}, []*manifestError{{msg: "expected an object, got " + jsonKind(js[0])}}, nil
	}
	pod := &v1.Pod{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, pod)
	if err != nil {
		var typeMeta metav1.TypeMeta
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &typeMeta); err != nil {
			return Document{}, []*manifestError{{msg: fmt.Sprintf("read apiVersion and kind: %v", err), cause: err}}, nil
		}
		if isOtherKind(typeMeta.Kind) {
			return Document{}, nil, &typeMeta
		}
		if problems := checkTypeMeta(typeMeta); len(problems) > 0 {
			return Document{}, problems, nil
		}
		return Document{}, []*manifestError{{msg: err.Error(), cause: err}}, nil
	}
	if isOtherKind(pod.Kind) {
		tm := pod.TypeMeta
		return Document{}, nil, &tm
	}
	if problems := checkTypeMeta(pod.TypeMeta); len(problems) > 0 {
		return Document{}, problems, nil
	}
	for _, strictErr := range strictErrs {
		problems = append(problems, strictProblem("", strictErr))
	}

	p := &Pod{Pod: pod}
	problems = append(problems, moveLegacyInitContainers(p)...)
	problems = append(problems, decodeDeferContainers(p)...)
	if len(problems) > 0 {
		return Document{}, problems, nil
	}
	written := pod.Namespace
	Default(p)
	return Document{Pod: p, Namespace: written}, nil, nil
}

// supportedKinds says what a manifest may hold.
const supportedKinds = "podward runs Pods, ConfigMaps and Secrets"

// checkTypeMeta accepts apiVersion v1, kind Pod and nothing else.
func checkTypeMeta(tm metav1.TypeMeta) []*manifestError {
	var problems []*manifestError
	switch tm.Kind {
	case "Pod":
	case "":
		problems = append(problems, &manifestError{msg: `kind is missing: ` + supportedKinds + ` (want "kind: Pod")`})
	default:
		// The apiVersion of another kind says nothing useful.
		return []*manifestError{{msg: fmt.Sprintf("kind %q is not supported: %s", tm.Kind, supportedKinds)}}
	}
	switch tm.APIVersion {
	case "v1":
	case "":
		problems = append(problems, &manifestError{msg: `apiVersion is missing: a Pod is "apiVersion: v1"`})
	default:
		problems = append(problems, &manifestError{msg: fmt.Sprintf("apiVersion %q is not supported: a Pod is \"apiVersion: v1\"", tm.APIVersion)})
	}
	return problems
}

// moveLegacyInitContainers moves the init containers of the pre-1.6
// annotation into spec.initContainers and drops the annotation.
func moveLegacyInitContainers(p *Pod) []*manifestError {
	raw, ok := p.Annotations[LegacyInitContainersAnnotation]
	if !ok {
		return nil
	}
	path := annotationPath(LegacyInitContainersAnnotation)
	containers, problems := decodeContainerList(raw, path)
	if len(problems) > 0 {
		return problems
	}
	if len(p.Spec.InitContainers) > 0 {
		return []*manifestError{{msg: path.String() + ": may not be set together with spec.initContainers: move these init containers into spec.initContainers"}}
	}
	p.Spec.InitContainers = containers
	delete(p.Annotations, LegacyInitContainersAnnotation)
	if len(p.Annotations) == 0 {
		p.Annotations = nil
	}
	return nil
}

// decodeDeferContainers fills p.Defer from DeferContainersAnnotation.
func decodeDeferContainers(p *Pod) []*manifestError {
	raw, ok := p.Annotations[DeferContainersAnnotation]
	if !ok {
		return nil
	}
	containers, problems := decodeContainerList(raw, annotationPath(DeferContainersAnnotation))
	if len(problems) > 0 {
		return problems
	}
	p.Defer = containers
	return nil
}

func annotationPath(key string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(key)
}

// decodeContainerList strictly decodes an annotation holding a JSON list of
// containers; problems are reported under path.
func decodeContainerList(raw string, path *field.Path) ([]v1.Container, []*manifestError) {
	var containers []v1.Container
	strictErrs, err := sigsjson.UnmarshalStrict([]byte(raw), &containers)
	if err != nil {
		return nil, []*manifestError{{
			msg:   fmt.Sprintf("%s: invalid JSON list of containers: %v", path, err),
			cause: err,
		}}
	}
	var problems []*manifestError
	for _, strictErr := range strictErrs {
		problems = append(problems, strictProblem(path.String(), strictErr))
	}
	return containers, problems
}

// strictProblem renders a strict-decoding error (unknown or duplicate field)
// as "path: unknown field", the path starting at prefix.
func strictProblem(prefix string, err error) *manifestError {
	var fieldErr sigsjson.FieldError
	if !errors.As(err, &fieldErr) {
		if prefix == "" {
			return &manifestError{msg: err.Error(), cause: err}
		}
		return &manifestError{msg: prefix + ": " + err.Error(), cause: err}
	}
	path := fieldErr.FieldPath()
	// The error reads `unknown field "path"`: keep what comes before the path.
	what := strings.TrimSuffix(err.Error(), " "+strconv.Quote(path))
	switch {
	case prefix == "":
	case strings.HasPrefix(path, "["):
		path = prefix + path
	default:
		path = prefix + "." + path
	}
	return &manifestError{msg: path + ": " + what, cause: err}
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
