package cri

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podspec"
)

var _ runtime.Warner = (*Runtime)(nil)

// warningBuffer is how many warnings wait for the consumer before new ones
// are dropped (and logged).
const warningBuffer = 64

// containerEnv is the container's env as CRI key/values (podspec.Env:
// envFrom then env, a later duplicate replacing an earlier one in place,
// read through the Runtime's objects and allocatable, then the pod's
// service links it does not set), and the variables
// $(VAR) references in command, args and subPathExpr may use. Unlike the
// process runtime's, it adds no PATH or HOSTNAME: those come from the
// image and the CRI runtime. An exec in the container has the env the CRI
// runtime keeps with it. path is the container's field path for error
// messages; a missing object is a runtime.ContainerConfigError.
func (r *Runtime) containerEnv(ctx context.Context, pod *model.Pod, c *v1.Container, path string) ([]*runtimeapi.KeyValue, podspec.Vars, error) {
	env, vars, err := podspec.Env(ctx, pod, c, path, podspec.EnvSources{
		Objects:     r.objects.Getter,
		Services:    r.objects.Services,
		Allocatable: r.allocatable,
		Addresses:   r.addresses(pod),
		Warn: func(reason, message string) {
			r.warn(runtime.Warning{PodUID: pod.UID, Container: c.Name, Reason: runtime.WarningReason(reason), Message: message})
		},
	})
	if err != nil {
		return nil, nil, err
	}
	kvs := make([]*runtimeapi.KeyValue, len(env))
	for i, e := range env {
		kvs[i] = &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)}
	}
	return kvs, vars, nil
}

// Warnings reports what a pod's owner should see of its containers'
// configuration that does not stop them (envFrom keys that are no
// variable names). A warning is dropped (and logged) when the consumer
// does not keep up.
func (r *Runtime) Warnings() <-chan runtime.Warning { return r.warnings }

// warn hands w to the consumer, or drops it when the buffer is full.
func (r *Runtime) warn(w runtime.Warning) {
	select {
	case r.warnings <- w:
	default:
		r.log.Warn("warning dropped: nobody reads them", "podUID", w.PodUID, "container", w.Container, "reason", w.Reason, "message", w.Message)
	}
}

// addresses are the host's and the pod's IPs for the downward API: the
// node's IP, and the pod's (statusIPs): on the pod network once its
// sandbox runs, the node's when it shares the host's network.
func (r *Runtime) addresses(pod *model.Pod) podspec.Addresses {
	a := podspec.Addresses{HostIP: r.nodeIP, PodIPs: r.statusIPs(pod)}
	if len(a.PodIPs) > 0 {
		a.PodIP = a.PodIPs[0]
	}
	return a
}
