package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyResult is what an apply did, in kubectl's words.
type ApplyResult string

// Apply outcomes, as the agent reports them in the Podward-Apply-Result
// header.
const (
	Created    ApplyResult = "created"
	Unchanged  ApplyResult = "unchanged"
	Configured ApplyResult = "configured" // replaced by a pod with the new spec, or updated in place
)

const (
	applyResultHeader = "Podward-Apply-Result"
	applyContentType  = "application/apply-patch+yaml"
)

// ListOptions select objects, as Kubernetes' fieldSelector and
// labelSelector parameters do (e.g. FieldSelector "metadata.name=web").
type ListOptions struct {
	FieldSelector string
	LabelSelector string
}

func (o ListOptions) query(watch bool) url.Values {
	q := url.Values{}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if watch {
		q.Set("watch", "true")
	}
	return q
}

func podsPath(ns string) string {
	if ns == "" {
		return "/api/v1/pods"
	}
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods"
}

func podPath(ns, name string) string {
	return podsPath(ns) + "/" + url.PathEscape(name)
}

// ListPods lists the pods of ns ("" for every namespace).
func (c *Client) ListPods(ctx context.Context, ns string, opts ListOptions) (*v1.PodList, error) {
	var list v1.PodList
	if _, err := c.call(ctx, request{method: http.MethodGet, path: podsPath(ns), query: opts.query(false)}, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// GetPod reads one pod with its status.
func (c *Client) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	var pod v1.Pod
	if _, err := c.call(ctx, request{method: http.MethodGet, path: podPath(ns, name)}, &pod); err != nil {
		return nil, err
	}
	return &pod, nil
}

// CreatePod creates pod in its namespace; it fails with AlreadyExists when
// the name is taken.
func (c *Client) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	body, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	var out v1.Pod
	if _, err := c.call(ctx, request{method: http.MethodPost, path: podsPath(pod.Namespace), body: body, contentType: "application/json"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApplyPod creates pod, or replaces the pod of the same name when the spec
// changed, or leaves it when it did not. The pod returned is the one that
// exists now (for Configured, the old one, being deleted).
func (c *Client) ApplyPod(ctx context.Context, pod *v1.Pod) (*v1.Pod, ApplyResult, error) {
	body, err := json.Marshal(pod)
	if err != nil {
		return nil, "", fmt.Errorf("encode pod: %w", err)
	}
	var out v1.Pod
	h, err := c.call(ctx, request{method: http.MethodPatch, path: podPath(pod.Namespace, pod.Name), body: body, contentType: applyContentType}, &out)
	if err != nil {
		return nil, "", err
	}
	return &out, ApplyResult(h.Get(applyResultHeader)), nil
}

// DeleteOptions tune a delete.
type DeleteOptions struct {
	// GracePeriodSeconds overrides the pod's terminationGracePeriodSeconds.
	GracePeriodSeconds *int64
	// UID, when set, makes the delete fail with a Conflict unless the pod
	// has this UID.
	UID *string
}

// DeletePod asks for the graceful termination of a pod and returns it as
// it is now. The pod goes away once its termination is over: watch for it.
func (c *Client) DeletePod(ctx context.Context, ns, name string, opts DeleteOptions) (*v1.Pod, error) {
	do := metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}, GracePeriodSeconds: opts.GracePeriodSeconds}
	if opts.UID != nil {
		do.Preconditions = metav1.NewUIDPreconditions(*opts.UID)
	}
	body, err := json.Marshal(&do)
	if err != nil {
		return nil, err
	}
	var out v1.Pod
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: podPath(ns, name), body: body, contentType: "application/json"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WatchPods streams the changes of the pods of ns ("" for all) that match
// opts: first an ADDED event for each such pod, then one event per change.
// The watch ends when ctx ends or the agent stops (Next then fails).
func (c *Client) WatchPods(ctx context.Context, ns string, opts ListOptions) (*Watch[v1.Pod], error) {
	resp, cancel, err := c.do(ctx, request{method: http.MethodGet, path: podsPath(ns), query: opts.query(true), stream: true})
	if err != nil {
		return nil, err
	}
	return newWatch[v1.Pod](resp.Body, cancel), nil
}

// Logs streams a container's log as the agent sends it: text lines, each
// prefixed by its RFC 3339 timestamp with opts.Timestamps. With
// opts.Follow the stream goes on until the container instance ends. The
// caller closes the reader. Supported options: Container, Follow, Previous,
// Timestamps, TailLines, LimitBytes (the stream ends once that many bytes
// were sent, in the middle of a line if need be).
func (c *Client) Logs(ctx context.Context, ns, name string, opts v1.PodLogOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	for k, b := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if b {
			q.Set(k, "true")
		}
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	resp, cancel, err := c.do(ctx, request{method: http.MethodGet, path: podPath(ns, name) + "/log", query: q, stream: true})
	if err != nil {
		return nil, err
	}
	return &streamBody{ReadCloser: resp.Body, cancel: cancel}, nil
}

// AddEphemeralContainer adds ec to the running pod ns/name through its
// ephemeralcontainers subresource, as kubectl debug does: a strategic
// merge patch of spec.ephemeralContainers, which merges by name, so the
// pod's other ephemeral containers stay. It returns the pod as it is then;
// the container starts soon after (see its
// status.ephemeralContainerStatuses). A container the agent refuses is an
// Invalid error naming the field.
func (c *Client) AddEphemeralContainer(ctx context.Context, ns, name string, ec v1.EphemeralContainer) (*v1.Pod, error) {
	patch := map[string]any{"spec": map[string]any{"ephemeralContainers": []v1.EphemeralContainer{ec}}}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode ephemeral container: %w", err)
	}
	var out v1.Pod
	req := request{method: http.MethodPatch, path: podPath(ns, name) + "/ephemeralcontainers", body: body, contentType: "application/strategic-merge-patch+json"}
	if _, err := c.call(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ResizePod resizes the running pod ns/name through its resize
// subresource (KEP-1287): pod is the pod as it is to be, of which the
// containers' resources and resizePolicy are taken. It returns the pod as
// it is then; the containers get the new resources soon after (see
// status.containerStatuses[].resources and the PodResizeInProgress
// condition). A resize the agent refuses (the QoS class would change) is
// an Invalid error naming the field.
func (c *Client) ResizePod(ctx context.Context, ns, name string, pod *v1.Pod) (*v1.Pod, error) {
	body, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	var out v1.Pod
	req := request{method: http.MethodPut, path: podPath(ns, name) + "/resize", body: body, contentType: "application/json"}
	if _, err := c.call(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
