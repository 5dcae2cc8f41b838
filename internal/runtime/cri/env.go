package cri

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podspec"
)

// containerEnv is the container's env as CRI key/values (podspec.Env: in
// spec order, a later duplicate replacing an earlier one in place), and the
// variables $(VAR) references in command, args and subPathExpr may use.
// Unlike the process runtime's, it adds no PATH or HOSTNAME: those come
// from the image and the CRI runtime. path is the container's field path
// for error messages.
func (r *Runtime) containerEnv(pod *model.Pod, c *v1.Container, path string) ([]*runtimeapi.KeyValue, podspec.Vars, error) {
	env, vars, err := podspec.Env(pod, c, path, r.addresses(pod))
	if err != nil {
		return nil, nil, err
	}
	kvs := make([]*runtimeapi.KeyValue, len(env))
	for i, e := range env {
		kvs[i] = &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)}
	}
	return kvs, vars, nil
}

// addresses are the host's and the pod's IPs for the downward API: the
// node's IP, and the pod's on the pod network once its sandbox runs (the
// node's when it shares the host's network).
func (r *Runtime) addresses(pod *model.Pod) podspec.Addresses {
	podIP := r.nodeIP
	if !r.hostNetwork(pod) {
		podIP = r.sandboxIP(pod.UID)
	}
	return podspec.Addresses{HostIP: r.nodeIP, PodIP: podIP}
}
