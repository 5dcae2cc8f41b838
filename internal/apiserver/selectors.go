package apiserver

import (
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Field selectors each resource supports, as in Kubernetes.
var (
	podFieldLabels = map[string]bool{
		"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
		"spec.nodeName": true, "spec.restartPolicy": true,
		"status.phase": true, "status.podIP": true,
	}
	eventFieldLabels = map[string]bool{
		"metadata.name": true, "metadata.namespace": true,
		"involvedObject.kind": true, "involvedObject.namespace": true, "involvedObject.name": true,
		"involvedObject.uid": true, "involvedObject.apiVersion": true, "involvedObject.fieldPath": true,
		"reason": true, "source": true, "type": true,
	}
)

// selector is a request's fieldSelector and labelSelector.
type selector struct {
	fields fields.Selector
	labels labels.Selector
}

// parseSelector reads fieldSelector (only the given field labels) and
// labelSelector from q.
func parseSelector(q url.Values, supported map[string]bool) (selector, error) {
	sel := selector{fields: fields.Everything(), labels: labels.Everything()}
	if raw := q.Get("fieldSelector"); raw != "" {
		fs, err := fields.ParseSelector(raw)
		if err != nil {
			return sel, badRequest("invalid fieldSelector: %v", err)
		}
		for _, req := range fs.Requirements() {
			if !supported[req.Field] {
				return sel, badRequest("field label not supported: %s", req.Field)
			}
		}
		sel.fields = fs
	}
	if raw := q.Get("labelSelector"); raw != "" {
		ls, err := labels.Parse(raw)
		if err != nil {
			return sel, badRequest("invalid labelSelector: %v", err)
		}
		sel.labels = ls
	}
	return sel, nil
}

func (s selector) matchesPod(p *v1.Pod) bool {
	return s.labels.Matches(labels.Set(p.Labels)) && s.fields.Matches(fields.Set{
		"metadata.name":      p.Name,
		"metadata.namespace": p.Namespace,
		"metadata.uid":       string(p.UID),
		"spec.nodeName":      p.Spec.NodeName,
		"spec.restartPolicy": string(p.Spec.RestartPolicy),
		"status.phase":       string(p.Status.Phase),
		"status.podIP":       p.Status.PodIP,
	})
}

func (s selector) matchesEvent(e *v1.Event) bool {
	return s.labels.Matches(labels.Set(e.Labels)) && s.fields.Matches(fields.Set{
		"metadata.name":             e.Name,
		"metadata.namespace":        e.Namespace,
		"involvedObject.kind":       e.InvolvedObject.Kind,
		"involvedObject.namespace":  e.InvolvedObject.Namespace,
		"involvedObject.name":       e.InvolvedObject.Name,
		"involvedObject.uid":        string(e.InvolvedObject.UID),
		"involvedObject.apiVersion": e.InvolvedObject.APIVersion,
		"involvedObject.fieldPath":  e.InvolvedObject.FieldPath,
		"reason":                    e.Reason,
		"source":                    e.Source.Component,
		"type":                      e.Type,
	})
}

// boolParam reads a boolean query parameter ("true", "1", ...); absent is
// false.
func boolParam(q url.Values, name string) (bool, error) {
	raw := q.Get(name)
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(raw))
	if err != nil {
		return false, badRequest("invalid %s %q: want true or false", name, raw)
	}
	return b, nil
}

// intParam reads an integer query parameter; ok is false when absent.
func intParam(q url.Values, name string) (n int64, ok bool, err error) {
	raw := q.Get(name)
	if raw == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, false, badRequest("invalid %s %q: want an integer", name, raw)
	}
	return n, true, nil
}
