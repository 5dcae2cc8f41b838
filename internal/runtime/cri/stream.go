package cri

import (
	"context"
	"fmt"
	"net/url"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

var (
	_ runtime.StreamLocator = (*Runtime)(nil)
	_ runtime.AttachLocator = (*Runtime)(nil)
)

// ExecURL asks the CRI runtime where it serves an exec of cmd in the
// running instance of container ref (its Exec call): a URL of its own
// streaming server, which the caller proxies the client to, as the kubelet
// does. The URL is good for one connection, within the runtime's timeout
// (containerd's: a minute).
func (r *Runtime) ExecURL(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	id, err := r.runningInstance(ctx, pod, ref)
	if err != nil {
		return nil, fmt.Errorf("exec in container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rt.Exec(cctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	if err != nil {
		return nil, fmt.Errorf("exec in container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return parseStreamURL(resp.Url)
}

// AttachURL asks the CRI runtime where it serves an attach to the running
// instance of container ref (its Attach call), as ExecURL.
func (r *Runtime) AttachURL(ctx context.Context, pod *model.Pod, ref model.ContainerRef, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	id, err := r.runningInstance(ctx, pod, ref)
	if err != nil {
		return nil, fmt.Errorf("attach to container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rt.Attach(cctx, &runtimeapi.AttachRequest{ContainerId: id, Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	if err != nil {
		return nil, fmt.Errorf("attach to container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return parseStreamURL(resp.Url)
}

// PortForwardURL asks the CRI runtime where it serves port-forwards to the
// pod's sandbox (its PortForward call), the pod's network.
func (r *Runtime) PortForwardURL(ctx context.Context, pod *model.Pod, ports []int32) (*url.URL, error) {
	id, err := r.readySandbox(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod.Key(), err)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rt.PortForward(cctx, &runtimeapi.PortForwardRequest{PodSandboxId: id, Port: ports})
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod.Key(), err)
	}
	return parseStreamURL(resp.Url)
}

// readySandbox is the ID of the pod's ready sandbox: the one PreparePod
// made, or, after an agent restart, the newest ready one its labels find;
// an error wrapping runtime.ErrNotFound when it has none.
func (r *Runtime) readySandbox(ctx context.Context, pod *model.Pod) (string, error) {
	r.mu.Lock()
	sb, ok := r.sandboxes[pod.UID]
	r.mu.Unlock()
	if ok && !sb.restored {
		return sb.id, nil
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: r.selector(LabelPodUID, string(pod.UID)),
	}})
	if err != nil {
		return "", fmt.Errorf("list sandboxes: %w", err)
	}
	var ready *runtimeapi.PodSandbox
	for _, s := range resp.Items {
		if ready == nil || s.CreatedAt > ready.CreatedAt {
			ready = s
		}
	}
	if ready == nil {
		return "", fmt.Errorf("no ready sandbox: %w", runtime.ErrNotFound)
	}
	return ready.Id, nil
}

// parseStreamURL parses the URL a streaming call returned.
func parseStreamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the runtime's streaming URL %q: %w", raw, err)
	}
	return u, nil
}
