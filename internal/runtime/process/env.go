package process

import (
	"context"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
)

// defaultPath is the PATH of a container whose spec sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// localIP stands for the pod's and the host's IP: a process runtime pod
// shares the host's network, and loopback is the address that always works.
const localIP = "127.0.0.1"

// containerEnv is the environment of a container, as "NAME=value": the
// default PATH and HOSTNAME (the pod's host name, podnet.Hostname; the
// host's for a pod on the host network), which a process has no image or
// container runtime to take from, overridden by the spec's env
// (podspec.Env, in spec order, then the service links it does not set).
// vars holds only the spec's variables and the service links, which are
// what $(VAR) references in command, args and subPathExpr may use, as in
// Kubernetes. path is the
// container's field path for error messages, such as "spec.containers[0]".
// The objects and the machine's allocatable are the Runtime's; invalid
// envFrom keys become a Warning of the pod. A missing object is a
// runtime.ContainerConfigError.
func (r *Runtime) containerEnv(ctx context.Context, pod *model.Pod, c *v1.Container, path string) (env []string, vars podspec.Vars, err error) {
	spec, vars, err := podspec.Env(ctx, pod, c, path, podspec.EnvSources{
		Objects:     r.objects.Getter,
		Services:    r.objects.Services,
		Allocatable: r.allocatable,
		Addresses:   podspec.Addresses{HostIP: localIP, PodIP: localIP},
		Warn: func(reason, message string) {
			r.warn(runtime.Warning{PodUID: pod.UID, Container: c.Name, Reason: runtime.WarningReason(reason), Message: message},
				r.log.With("pod", pod.Key(), "podUID", pod.UID, "container", c.Name))
		},
	})
	if err != nil {
		return nil, nil, err
	}
	env = make([]string, 0, 2+len(spec))
	hostname, err := podnet.Hostname(pod, r.dns.ClusterDomain)
	if err != nil {
		return nil, nil, err
	}
	if pod.Spec.HostNetwork {
		if h, err := os.Hostname(); err == nil {
			hostname = h
		}
	}
	env = append(env, "PATH="+defaultPath, "HOSTNAME="+hostname)
	for _, e := range spec {
		switch e.Name {
		case "PATH":
			env[0] = "PATH=" + e.Value
		case "HOSTNAME":
			env[1] = "HOSTNAME=" + e.Value
		default:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return env, vars, nil
}
