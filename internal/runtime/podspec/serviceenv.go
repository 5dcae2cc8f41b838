package podspec

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// The master service: the API server's own Service, whose variables
// (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, ...) every pod gets,
// whatever its namespace and enableServiceLinks (the kubelet's
// masterServices in its masterServiceNamespace).
const (
	MasterServiceNamespace = "default"
	MasterServiceName      = "kubernetes"
)

// ServicesSyncWait bounds how long a pod's environment waits for the
// Services' first read (objects.ServiceLister.WaitForServices). Past it
// the container waits with the kubelet's CreateContainerConfigError and
// its start is tried again later.
const ServicesSyncWait = 10 * time.Second

// errServicesNotSynced is the kubelet's message for a pod whose
// environment is built before the Services have been read once.
const errServicesNotSynced = "services have not yet been read at least once, cannot construct envvars"

// ServiceEnv is the service links a pod in namespace sees, as the kubelet
// computes them (getServiceEnvVarMap, envvars.FromServices): of services,
// those with a ClusterIP (set and not "None") that are the master service
// of MasterServiceNamespace, always, or, when enableServiceLinks, of
// namespace (a service of namespace named like the master service
// replaces it). For each, by name:
//
//	<NAME>_SERVICE_HOST=<clusterIP>
//	<NAME>_SERVICE_PORT=<first port>
//	<NAME>_SERVICE_PORT_<PORTNAME>=<port>          each named port
//	<NAME>_PORT=<proto>://<clusterIP>:<first port>
//	<NAME>_PORT_<port>_<PROTO>=<proto>://<clusterIP>:<port>   each port, with
//	<NAME>_PORT_<port>_<PROTO>_PROTO, _PORT and _ADDR
//
// where NAME is the service's name upper-cased with '-' as '_', and the
// protocol is TCP when unset. It is pure; the result is the caller's.
func ServiceEnv(services []*v1.Service, namespace string, enableServiceLinks bool) []EnvVar {
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		switch {
		case s.Namespace == MasterServiceNamespace && s.Name == MasterServiceName:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == namespace && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	slices.Sort(names)
	var env []EnvVar
	for _, name := range names {
		env = append(env, serviceVars(chosen[name])...)
	}
	return env
}

// serviceIPSet is the kubelet's IsServiceIPSet: a ClusterIP set and not
// "None" (a headless service has none).
func serviceIPSet(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// serviceVars are the variables of one service (ServiceEnv). A service
// without ports (which validation refuses for one with a ClusterIP) has
// only its _SERVICE_HOST.
func serviceVars(s *v1.Service) []EnvVar {
	prefix := envVarName(s.Name)
	ip := s.Spec.ClusterIP
	env := []EnvVar{{prefix + "_SERVICE_HOST", ip}}
	if len(s.Spec.Ports) == 0 {
		return env
	}
	env = append(env, EnvVar{prefix + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))})
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env = append(env, EnvVar{prefix + "_SERVICE_PORT_" + envVarName(p.Name), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env = append(env, EnvVar{prefix + "_PORT", url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		env = append(env,
			EnvVar{pp, url},
			EnvVar{pp + "_PROTO", strings.ToLower(proto)},
			EnvVar{pp + "_PORT", port},
			EnvVar{pp + "_ADDR", ip},
		)
	}
	return env
}

// envVarName is a service's or port's name as a variable's: upper case,
// '-' as '_'.
func envVarName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// serviceEnv reads the pod's service links through the sources' lister:
// none without one. Unless the pod is static, it first waits for the
// Services' first read, at most ServicesSyncWait; past it, or when the
// lister fails, the error is a runtime.ContainerConfigError with the
// kubelet's message. When ctx ends, its error is returned.
func (r *envReader) serviceEnv() ([]EnvVar, error) {
	l := r.src.Services
	if l == nil {
		return nil, nil
	}
	if !model.IsStatic(r.pod) {
		wctx, cancel := context.WithTimeout(r.ctx, ServicesSyncWait)
		err := l.WaitForServices(wctx)
		cancel()
		if err != nil {
			if ctxErr := r.ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, &runtime.ContainerConfigError{Message: errServicesNotSynced, Err: err}
		}
	}
	ns := r.pod.Namespace
	services, err := l.Services(ns)
	if err == nil && ns != MasterServiceNamespace {
		var master []*v1.Service
		master, err = l.Services(MasterServiceNamespace)
		services = append(slices.Clip(services), master...)
	}
	if err != nil {
		return nil, &runtime.ContainerConfigError{Message: "failed to list services when setting up env vars", Err: fmt.Errorf("list services: %w", err)}
	}
	return ServiceEnv(services, ns, enableServiceLinks(r.pod)), nil
}

// enableServiceLinks is the pod's spec.enableServiceLinks; unset is true,
// the API's default.
func enableServiceLinks(pod *model.Pod) bool {
	return pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}
