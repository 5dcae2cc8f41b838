package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages shared by several rules.
const (
	msgNonNegative       = "must be greater than or equal to 0"
	msgPositive          = "must be greater than or equal to 1"
	msgInitNotSidecar    = "may not be set for init containers without restartPolicy=Always"
	msgDeferContainer    = "may not be set for defer containers"
	msgOneHandler        = "may not specify more than 1 handler type"
	msgOneVolumeType     = "may not specify more than 1 volume type"
	msgOneSource         = "may not have more than one field specified at a time"
	msgNoBacksteps       = "must not contain '..'"
	msgNonOvercommitable = "Limit must be set for non overcommitable resources"
)

// Validate checks a defaulted pod the way the Kubernetes API server checks
// a pod on create, plus podward's rules for defer containers, and returns
// every problem it finds (nil when there is none). Each error carries a
// Kubernetes field path; defer containers are reported under the annotation
// they were written in, e.g.
// metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].name.
//
// The order is stable: metadata, volumes, init containers, containers, defer
// containers, then the pod-level fields of spec; within a container, its
// fields in declaration order. A pod of more than MaxContainers containers
// gets one error for its spec, "spec.containers: Too many". Validate does
// not change p.
func Validate(p *Pod) field.ErrorList {
	if p == nil || p.Pod == nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), errors.New("no pod to validate"))}
	}
	v := &validator{
		pod:         p,
		volumes:     map[string]*v1.Volume{},
		containers:  map[string]bool{},
		hostPorts:   map[string]bool{},
		windowsOnly: p.Spec.OS != nil && p.Spec.OS.Name == v1.Windows,
	}
	v.metadata(&p.ObjectMeta)
	if v.tooManyContainers() {
		return v.errs
	}
	v.spec()
	return v.errs
}

// FormatErrors renders errs one per line, as "path: problem", without a
// trailing newline. It returns "" for an empty list.
func FormatErrors(errs field.ErrorList) string {
	lines := make([]string, 0, len(errs))
	for _, err := range errs {
		if err != nil {
			lines = append(lines, err.Error())
		}
	}
	return strings.Join(lines, "\n")
}

// validator collects the errors of one pod, together with what the
// container checks need to know about the rest of the pod.
type validator struct {
	pod         *Pod
	volumes     map[string]*v1.Volume // declared volumes, by name
	containers  map[string]bool       // container names seen so far, in all lists
	hostPorts   map[string]bool       // host ports taken by sidecars and containers
	windowsOnly bool                  // spec.os.name is windows
	errs        field.ErrorList
}

func (v *validator) add(errs ...*field.Error) {
	v.errs = append(v.errs, errs...)
}

func (v *validator) invalidEach(path *field.Path, value any, msgs []string) {
	for _, msg := range msgs {
		v.add(field.Invalid(path, value, msg))
	}
}

func (v *validator) metadata(meta *metav1.ObjectMeta) {
	path := field.NewPath("metadata")
	switch {
	case meta.Name == "" && meta.GenerateName != "":
		v.add(field.Required(path.Child("name"), "podward does not generate names"))
	case meta.Name == "":
		v.add(field.Required(path.Child("name"), ""))
	default:
		v.invalidEach(path.Child("name"), meta.Name, validation.IsDNS1123Subdomain(meta.Name))
	}
	if meta.Namespace == "" {
		v.add(field.Required(path.Child("namespace"), ""))
	} else {
		v.invalidEach(path.Child("namespace"), meta.Namespace, apivalidation.ValidateNamespaceName(meta.Namespace, false))
	}
	// One key at a time, in order, so that the errors come out stable.
	for _, key := range slices.Sorted(maps.Keys(meta.Labels)) {
		v.add(metav1validation.ValidateLabels(map[string]string{key: meta.Labels[key]}, path.Child("labels"))...)
	}
	for _, key := range slices.Sorted(maps.Keys(meta.Annotations)) {
		// Annotation keys are label keys, except that case does not matter.
		v.invalidEach(path.Child("annotations"), key, validation.IsQualifiedName(strings.ToLower(key)))
	}
	if err := apivalidation.ValidateAnnotationsSize(meta.Annotations); err != nil {
		v.add(field.TooLong(path.Child("annotations"), "", apivalidation.TotalAnnotationSizeLimitB))
	}
}

func (v *validator) spec() {
	spec := &v.pod.Spec
	path := field.NewPath("spec")

	if sc := spec.SecurityContext; sc != nil {
		scPath := path.Child("securityContext")
		v.nonNegativeID(sc.RunAsUser, scPath.Child("runAsUser"))
		v.nonNegativeID(sc.RunAsGroup, scPath.Child("runAsGroup"))
		v.nonNegativeID(sc.FSGroup, scPath.Child("fsGroup"))
		for i := range sc.SupplementalGroups {
			v.nonNegativeID(&sc.SupplementalGroups[i], scPath.Child("supplementalGroups").Index(i))
		}
	}
	v.volumeList(spec.Volumes, path.Child("volumes"))
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		role := RoleInit
		if IsSidecar(c) {
			role = RoleSidecar
		}
		v.container(c, role, path.Child("initContainers").Index(i))
	}
	if len(spec.Containers) == 0 {
		v.add(field.Required(path.Child("containers"), ""))
	}
	for i := range spec.Containers {
		v.container(&spec.Containers[i], RoleMain, path.Child("containers").Index(i))
	}
	deferPath := annotationPath(DeferContainersAnnotation)
	for i := range v.pod.Defer {
		v.container(&v.pod.Defer[i], RoleDefer, deferPath.Index(i))
	}
	if len(spec.EphemeralContainers) > 0 {
		v.add(field.Forbidden(path.Child("ephemeralContainers"), "cannot be set on create"))
	}
	v.podResources()

	checkEnum(v, path.Child("restartPolicy"), spec.RestartPolicy,
		v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)
	checkEnum(v, path.Child("dnsPolicy"), spec.DNSPolicy,
		v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)
	if spec.DNSPolicy == v1.DNSNone && spec.DNSConfig == nil {
		v.add(field.Required(path.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		v.add(field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, msgNonNegative))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		v.add(field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		v.invalidEach(path.Child("hostname"), spec.Hostname, validation.IsDNS1123Label(spec.Hostname))
	}
	if spec.Subdomain != "" {
		v.invalidEach(path.Child("subdomain"), spec.Subdomain, validation.IsDNS1123Label(spec.Subdomain))
	}
	if o := spec.HostnameOverride; o != nil {
		// The host name the pod's UTS namespace gets: at most 64
		// characters, as the kubelet cuts it to 63.
		v.invalidEach(path.Child("hostnameOverride"), *o, validation.IsDNS1123Subdomain(*o))
		if len(*o) > 64 {
			v.add(field.TooLong(path.Child("hostnameOverride"), *o, 64))
		}
	}
	for i, a := range spec.HostAliases {
		p := path.Child("hostAliases").Index(i)
		if net.ParseIP(a.IP) == nil {
			v.add(field.Invalid(p.Child("ip"), a.IP, "must be a valid IP address"))
		}
		for j, h := range a.Hostnames {
			v.invalidEach(p.Child("hostnames").Index(j), h, validation.IsDNS1123Subdomain(h))
		}
	}
	if spec.OS != nil {
		checkEnum(v, path.Child("os", "name"), spec.OS.Name, v1.Linux, v1.Windows)
	}
}

// checkEnum checks a field that must hold one of supported, as Kubernetes
// checks its policies (which Default fills in): empty is Required, any
// other value not in supported is NotSupported.
func checkEnum[T ~string](v *validator, path *field.Path, value T, supported ...T) {
	switch {
	case value == "":
		v.add(field.Required(path, ""))
	case !slices.Contains(supported, value):
		v.add(field.NotSupported(path, value, supported))
	}
}

// --- volumes ---------------------------------------------------------------

// nonNegativeID checks a user or group ID as Kubernetes does: 0 to 2^31-1.
func (v *validator) nonNegativeID(id *int64, path *field.Path) {
	if id != nil && (*id < 0 || *id > math.MaxInt32) {
		v.add(field.Invalid(path, *id, "must be between 0 and 2147483647, inclusive"))
	}
}

func (v *validator) volumeList(volumes []v1.Volume, path *field.Path) {
	for i := range volumes {
		vol := &volumes[i]
		idx := path.Index(i)
		namePath := idx.Child("name")
		switch {
		case vol.Name == "":
			v.add(field.Required(namePath, ""))
		case v.volumes[vol.Name] != nil:
			v.add(field.Duplicate(namePath, vol.Name))
		default:
			v.invalidEach(namePath, vol.Name, validation.IsDNS1123Label(vol.Name))
			v.volumes[vol.Name] = vol
		}
		v.volumeSource(&vol.VolumeSource, idx)
	}
}

// volumeSourceNames lists the JSON names of the sources set in vs, in the
// order v1.VolumeSource declares them. Every source is a pointer field, so
// this covers sources added to the API later too.
func volumeSourceNames(vs *v1.VolumeSource) []string {
	rv := reflect.ValueOf(vs).Elem()
	rt := rv.Type()
	var names []string
	for i := range rt.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

func (v *validator) volumeSource(vs *v1.VolumeSource, path *field.Path) {
	sources := volumeSourceNames(vs)
	if len(sources) == 0 {
		v.add(field.Required(path, "must specify a volume type"))
		return
	}
	for _, extra := range sources[1:] {
		v.add(field.Forbidden(path.Child(extra), msgOneVolumeType))
	}
	// Like Kubernetes, only the first source is looked into.
	switch sources[0] {
	case "hostPath":
		v.hostPath(vs.HostPath, path.Child("hostPath"))
	case "emptyDir":
		if limit := vs.EmptyDir.SizeLimit; limit != nil && limit.Sign() < 0 {
			v.add(field.Invalid(path.Child("emptyDir", "sizeLimit"), limit.String(), msgNonNegative))
		}
	case "configMap":
		if vs.ConfigMap.Name == "" {
			v.add(field.Required(path.Child("configMap", "name"), ""))
		}
		v.fileMode(vs.ConfigMap.DefaultMode, path.Child("configMap", "defaultMode"))
	case "secret":
		if vs.Secret.SecretName == "" {
			v.add(field.Required(path.Child("secret", "secretName"), ""))
		}
		v.fileMode(vs.Secret.DefaultMode, path.Child("secret", "defaultMode"))
	}
}

var hostPathTypes = []v1.HostPathType{
	v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
	v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
}

func (v *validator) hostPath(hp *v1.HostPathVolumeSource, path *field.Path) {
	if hp.Path == "" {
		v.add(field.Required(path.Child("path"), ""))
	} else if hasBacksteps(hp.Path) {
		v.add(field.Invalid(path.Child("path"), hp.Path, msgNoBacksteps))
	}
	if hp.Type != nil && !slices.Contains(hostPathTypes, *hp.Type) {
		v.add(field.NotSupported(path.Child("type"), *hp.Type, hostPathTypes))
	}
}

func (v *validator) fileMode(mode *int32, path *field.Path) {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		v.add(field.Invalid(path, *mode, "must be a number between 0 and 0777 (octal), both inclusive"))
	}
}

// --- containers ------------------------------------------------------------

// container checks one container of any role. path is where the user wrote
// it: spec.initContainers[i], spec.containers[i] or the defer annotation.
func (v *validator) container(c *v1.Container, role Role, path *field.Path) {
	namePath := path.Child("name")
	if c.Name == "" {
		v.add(field.Required(namePath, ""))
	} else {
		v.invalidEach(namePath, c.Name, validation.IsDNS1123Label(c.Name))
		// Names are unique across init, regular and defer containers; the
		// later one is reported.
		if v.containers[c.Name] {
			v.add(field.Duplicate(namePath, c.Name))
		}
		v.containers[c.Name] = true
	}

	if sc := c.SecurityContext; sc != nil {
		scPath := path.Child("securityContext")
		v.nonNegativeID(sc.RunAsUser, scPath.Child("runAsUser"))
		v.nonNegativeID(sc.RunAsGroup, scPath.Child("runAsGroup"))
	}

	if c.Image == "" {
		v.add(field.Required(path.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		v.add(field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}

	if role == RoleDefer && len(c.Ports) > 0 {
		v.add(field.Forbidden(path.Child("ports"), msgDeferContainer))
	} else {
		v.ports(c.Ports, role, path.Child("ports"))
	}
	v.envFrom(c.EnvFrom, path.Child("envFrom"))
	v.env(c.Env, path.Child("env"))
	v.resources(&c.Resources, path.Child("resources"))
	v.resizePolicy(c, role, path)
	v.containerRestartPolicy(c, role, path)
	v.volumeMounts(c, path.Child("volumeMounts"))

	optional := []struct {
		name  string
		set   bool
		check func(*field.Path)
	}{
		{"livenessProbe", c.LivenessProbe != nil, func(p *field.Path) { v.probe(c.LivenessProbe, c, probeLiveness, p) }},
		{"readinessProbe", c.ReadinessProbe != nil, func(p *field.Path) { v.probe(c.ReadinessProbe, c, probeReadiness, p) }},
		{"startupProbe", c.StartupProbe != nil, func(p *field.Path) { v.probe(c.StartupProbe, c, probeStartup, p) }},
		{"lifecycle", c.Lifecycle != nil, func(p *field.Path) { v.lifecycle(c.Lifecycle, c, p) }},
	}
	for _, o := range optional {
		if !o.set {
			continue
		}
		switch role {
		case RoleInit:
			v.add(field.Forbidden(path.Child(o.name), msgInitNotSidecar))
		case RoleDefer:
			v.add(field.Forbidden(path.Child(o.name), msgDeferContainer))
		default:
			o.check(path.Child(o.name))
		}
	}

	checkEnum(v, path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
		v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)
	checkEnum(v, path.Child("imagePullPolicy"), c.ImagePullPolicy, v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)
}

// resizePolicy checks a container's resizePolicy as the API server 1.37
// does (validateResizePolicy, and validateInitContainers for an init
// container that is not a sidecar): see resizePolicyErrors, and no
// RestartContainer on a non-sidecar init container, whose resources never
// change.
func (v *validator) resizePolicy(c *v1.Container, role Role, containerPath *field.Path) {
	path := containerPath.Child("resizePolicy")
	v.add(resizePolicyErrors(c.ResizePolicy, path, v.pod.Spec.RestartPolicy)...)
	if role != RoleInit {
		return
	}
	for j, p := range c.ResizePolicy {
		if p.RestartPolicy == v1.RestartContainer {
			v.add(field.Invalid(path.Index(j).Child("restartPolicy"), p.RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
		}
	}
}

// resizePolicyErrors are the problems of a container's resizePolicy
// (path), in a pod whose restartPolicy is podPolicy, as the API server
// 1.37 finds them on create and on a resize (validateResizePolicy): each
// resource is cpu or memory and named once, each policy NotRequired or
// RestartContainer, and only NotRequired in a pod whose restartPolicy is
// Never (a container of such a pod is never restarted, for a resize
// neither).
func resizePolicyErrors(list []v1.ContainerResizePolicy, path *field.Path, podPolicy v1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1.ResourceName]bool{}
	for i, p := range list {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(path.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case v1.ResourceCPU, v1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, p.ResourceName, []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case v1.NotRequired, v1.RestartContainer:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, p.RestartPolicy, []v1.ResourceResizeRestartPolicy{v1.NotRequired, v1.RestartContainer}))
		}
		if podPolicy == v1.RestartPolicyNever && p.RestartPolicy != v1.NotRequired {
			errs = append(errs, field.Invalid(path, p.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// containerRestartPolicy: "Always" makes an init container a sidecar;
// regular and init containers (sidecars included) may set their own policy
// and restart rules (KEP-5307, KEP-5532), checked as the API server checks
// them; defer containers are retried on failure and so are "OnFailure"
// (Default sets it).
func (v *validator) containerRestartPolicy(c *v1.Container, role Role, containerPath *field.Path) {
	path := containerPath.Child("restartPolicy")
	rulesPath := containerPath.Child("restartPolicyRules")
	if role != RoleDefer {
		v.restartPolicyAndRules(c, path, rulesPath)
		return
	}
	if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyOnFailure {
		err := field.NotSupported(path, *c.RestartPolicy, []v1.ContainerRestartPolicy{v1.ContainerRestartPolicyOnFailure})
		err.Detail += ": defer containers run to completion and are retried on failure"
		v.add(err)
	}
	if len(c.RestartPolicyRules) > 0 {
		v.add(field.Forbidden(rulesPath, msgDeferContainer))
	}
}

// Limits of the API server on restart rules (validateContainerRestartPolicy
// in pkg/apis/core/validation/validation.go).
const (
	maxRestartRules         = 20
	maxRestartRuleExitCodes = 255
	msgRulesNeedPolicy      = "must specify restartPolicy when restart rules are used"
)

// restartPolicyAndRules checks a container's own restartPolicy and
// restartPolicyRules as the API server 1.37 does
// (validateContainerRestartPolicy), the same for regular containers, init
// containers and sidecars: the policy is Always, OnFailure or Never and must
// be set when there are rules; at most 20 rules, each with action Restart or
// RestartAllContainers and exitCodes with operator In or NotIn and at most
// 255 values (duplicates allowed, as the API server allows them).
func (v *validator) restartPolicyAndRules(c *v1.Container, path, rulesPath *field.Path) {
	policies := []v1.ContainerRestartPolicy{
		v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever,
	}
	switch {
	case c.RestartPolicy == nil:
		if len(c.RestartPolicyRules) > 0 {
			v.add(field.Required(path, msgRulesNeedPolicy))
		}
	case !slices.Contains(policies, *c.RestartPolicy):
		v.add(field.NotSupported(path, *c.RestartPolicy, policies))
	}
	if len(c.RestartPolicyRules) > maxRestartRules {
		v.add(field.TooMany(rulesPath, len(c.RestartPolicyRules), maxRestartRules))
	}
	actions := []v1.ContainerRestartRuleAction{
		v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers,
	}
	operators := []v1.ContainerRestartRuleOnExitCodesOperator{
		v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn,
	}
	for i := range c.RestartPolicyRules {
		rule := &c.RestartPolicyRules[i]
		idx := rulesPath.Index(i)
		if !slices.Contains(actions, rule.Action) {
			v.add(field.NotSupported(idx.Child("action"), rule.Action, actions))
		}
		if rule.ExitCodes == nil {
			v.add(field.Required(idx.Child("exitCodes"), "must be specified"))
			continue
		}
		exitCodes := idx.Child("exitCodes")
		if !slices.Contains(operators, rule.ExitCodes.Operator) {
			v.add(field.NotSupported(exitCodes.Child("operator"), rule.ExitCodes.Operator, operators))
		}
		if len(rule.ExitCodes.Values) > maxRestartRuleExitCodes {
			v.add(field.TooMany(exitCodes.Child("values"), len(rule.ExitCodes.Values), maxRestartRuleExitCodes))
		}
	}
}

var portProtocols = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}

func (v *validator) ports(ports []v1.ContainerPort, role Role, path *field.Path) {
	names := map[string]bool{}
	for i := range ports {
		port := &ports[i]
		idx := path.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				v.invalidEach(idx.Child("name"), port.Name, msgs)
			} else if names[port.Name] {
				v.add(field.Duplicate(idx.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			v.add(field.Required(idx.Child("containerPort"), ""))
		} else {
			v.invalidEach(idx.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))
		}
		if port.HostPort != 0 {
			v.invalidEach(idx.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))
			if v.pod.Spec.HostNetwork && port.HostPort != port.ContainerPort {
				v.add(field.Invalid(idx.Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
		switch {
		case port.Protocol == "":
			v.add(field.Required(idx.Child("protocol"), ""))
		case !slices.Contains(portProtocols, port.Protocol):
			v.add(field.NotSupported(idx.Child("protocol"), port.Protocol, portProtocols))
		}
		// Sidecars and regular containers run side by side on one node: a
		// host port can be bound by only one of them. Init containers run
		// one at a time, before them.
		if port.HostPort > 0 && role != RoleInit {
			key := fmt.Sprintf("%d/%s", port.HostPort, port.Protocol)
			if port.HostIP != "" {
				key = port.HostIP + ":" + key
			}
			if v.hostPorts[key] {
				v.add(field.Duplicate(idx.Child("hostPort"), key))
			}
			v.hostPorts[key] = true
		}
	}
}

// --- env -------------------------------------------------------------------

// Environment variable names follow Kubernetes' relaxed rule (any printable
// ASCII but '='), the default since RelaxedEnvironmentVariableValidation.
func (v *validator) env(env []v1.EnvVar, path *field.Path) {
	for i := range env {
		ev := &env[i]
		idx := path.Index(i)
		if ev.Name == "" {
			v.add(field.Required(idx.Child("name"), ""))
		} else {
			v.invalidEach(idx.Child("name"), ev.Name, validation.IsRelaxedEnvVarName(ev.Name))
		}
		if ev.ValueFrom != nil {
			v.envVarSource(ev, idx.Child("valueFrom"))
		}
	}
}

func (v *validator) envVarSource(ev *v1.EnvVar, path *field.Path) {
	from := ev.ValueFrom
	n := 0
	if from.FieldRef != nil {
		n++
		v.envFieldRef(from.FieldRef, path.Child("fieldRef"))
	}
	if from.ResourceFieldRef != nil {
		n++
		v.envResourceFieldRef(from.ResourceFieldRef, path.Child("resourceFieldRef"))
	}
	if from.ConfigMapKeyRef != nil {
		n++
		v.objectName(from.ConfigMapKeyRef.Name, path.Child("configMapKeyRef", "name"))
		v.configKey(from.ConfigMapKeyRef.Key, path.Child("configMapKeyRef", "key"))
	}
	if from.SecretKeyRef != nil {
		n++
		v.objectName(from.SecretKeyRef.Name, path.Child("secretKeyRef", "name"))
		v.configKey(from.SecretKeyRef.Key, path.Child("secretKeyRef", "key"))
	}
	if from.FileKeyRef != nil {
		n++
		v.envFileKeyRef(from.FileKeyRef, path.Child("fileKeyRef"))
	}
	switch {
	case n == 0:
		v.add(field.Required(path, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case n > 1:
		v.add(field.Forbidden(path, msgOneSource))
	}
	if ev.Value != "" {
		v.add(field.Forbidden(path, "may not be specified when `value` is not empty"))
	}
}

// envFieldPaths are the pod fields an environment variable may refer to,
// besides single labels and annotations.
var envFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

func (v *validator) envFieldRef(ref *v1.ObjectFieldSelector, path *field.Path) {
	if ref.APIVersion == "" {
		v.add(field.Required(path.Child("apiVersion"), ""))
	}
	fieldPath := path.Child("fieldPath")
	if ref.FieldPath == "" {
		v.add(field.Required(fieldPath, ""))
		return
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		if rest, ok := strings.CutPrefix(ref.FieldPath, prefix+"['"); ok {
			key, ok := strings.CutSuffix(rest, "']")
			if !ok {
				v.add(field.Invalid(fieldPath, ref.FieldPath, "must end with ']' after the quoted key"))
				return
			}
			if prefix == "metadata.annotations" {
				key = strings.ToLower(key)
			}
			v.invalidEach(fieldPath, ref.FieldPath, validation.IsQualifiedName(key))
			return
		}
	}
	if !slices.Contains(envFieldPaths, ref.FieldPath) {
		v.add(field.NotSupported(fieldPath, ref.FieldPath, envFieldPaths))
	}
}

var envResourceFields = []string{
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
}

func (v *validator) envResourceFieldRef(ref *v1.ResourceFieldSelector, path *field.Path) {
	switch {
	case ref.Resource == "":
		v.add(field.Required(path.Child("resource"), ""))
	case slices.Contains(envResourceFields, ref.Resource),
		strings.HasPrefix(ref.Resource, "limits.hugepages-"),
		strings.HasPrefix(ref.Resource, "requests.hugepages-"):
	default:
		v.add(field.NotSupported(path.Child("resource"), ref.Resource, envResourceFields))
	}
}

func (v *validator) envFileKeyRef(ref *v1.FileKeySelector, path *field.Path) {
	if ref.VolumeName == "" {
		v.add(field.Required(path.Child("volumeName"), ""))
	} else if v.volumes[ref.VolumeName] == nil {
		v.add(field.NotFound(path.Child("volumeName"), ref.VolumeName))
	}
	if ref.Path == "" {
		v.add(field.Required(path.Child("path"), ""))
	} else {
		v.localDescendingPath(ref.Path, path.Child("path"))
	}
	if ref.Key == "" {
		v.add(field.Required(path.Child("key"), ""))
	}
}

func (v *validator) envFrom(sources []v1.EnvFromSource, path *field.Path) {
	for i := range sources {
		src := &sources[i]
		idx := path.Index(i)
		if src.Prefix != "" {
			v.invalidEach(idx.Child("prefix"), src.Prefix, validation.IsRelaxedEnvVarName(src.Prefix))
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			v.objectName(src.ConfigMapRef.Name, idx.Child("configMapRef", "name"))
		}
		if src.SecretRef != nil {
			n++
			v.objectName(src.SecretRef.Name, idx.Child("secretRef", "name"))
		}
		switch {
		case n == 0:
			v.add(field.Required(idx, "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			v.add(field.Forbidden(idx, msgOneSource))
		}
	}
}

// objectName checks the name of a referenced ConfigMap or Secret.
func (v *validator) objectName(name string, path *field.Path) {
	if name == "" {
		v.add(field.Required(path, ""))
		return
	}
	v.invalidEach(path, name, validation.IsDNS1123Subdomain(name))
}

func (v *validator) configKey(key string, path *field.Path) {
	if key == "" {
		v.add(field.Required(path, ""))
		return
	}
	v.invalidEach(path, key, validation.IsConfigMapKey(key))
}

// --- volume mounts -----------------------------------------------------------

var mountPropagationModes = []v1.MountPropagationMode{
	v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional,
}

var recursiveReadOnlyModes = []v1.RecursiveReadOnlyMode{
	v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled,
}

// volumeMounts checks the mounts of c. Unlike Kubernetes, which leaves the
// form of mountPath to the node, podward runs Linux containers only and so
// requires an absolute mountPath.
func (v *validator) volumeMounts(c *v1.Container, fldPath *field.Path) {
	seen := map[string]bool{}
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		idx := fldPath.Index(i)
		if m.Name == "" {
			v.add(field.Required(idx.Child("name"), ""))
		} else if v.volumes[m.Name] == nil {
			v.add(field.NotFound(idx.Child("name"), m.Name))
		}

		mountPath := idx.Child("mountPath")
		switch {
		case m.MountPath == "":
			v.add(field.Required(mountPath, ""))
		case !path.IsAbs(m.MountPath):
			v.add(field.Invalid(mountPath, m.MountPath, "must be an absolute path"))
		case seen[path.Clean(m.MountPath)]:
			v.add(field.Invalid(mountPath, m.MountPath, "must be unique"))
		}
		seen[path.Clean(m.MountPath)] = true

		if m.SubPath != "" {
			v.localDescendingPath(m.SubPath, idx.Child("subPath"))
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				v.add(field.Invalid(idx.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			v.localDescendingPath(m.SubPathExpr, idx.Child("subPathExpr"))
		}

		if m.MountPropagation != nil {
			mode := *m.MountPropagation
			switch {
			case !slices.Contains(mountPropagationModes, mode):
				v.add(field.NotSupported(idx.Child("mountPropagation"), mode, mountPropagationModes))
			case mode == v1.MountPropagationBidirectional && !isPrivileged(c):
				v.add(field.Forbidden(idx.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		if m.RecursiveReadOnly != nil {
			mode := *m.RecursiveReadOnly
			rroPath := idx.Child("recursiveReadOnly")
			switch {
			case !slices.Contains(recursiveReadOnlyModes, mode):
				v.add(field.NotSupported(rroPath, mode, recursiveReadOnlyModes))
			case mode != v1.RecursiveReadOnlyDisabled && !m.ReadOnly:
				v.add(field.Forbidden(rroPath, "may only be specified when readOnly is true"))
			case mode == v1.RecursiveReadOnlyEnabled && m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone:
				v.add(field.Forbidden(rroPath, "may only be specified when mountPropagation is None or not specified"))
			}
		}
	}
}

func isPrivileged(c *v1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

func (v *validator) localDescendingPath(p string, fieldPath *field.Path) {
	if path.IsAbs(p) {
		v.add(field.Invalid(fieldPath, p, "must be a relative path"))
	}
	if hasBacksteps(p) {
		v.add(field.Invalid(fieldPath, p, msgNoBacksteps))
	}
}

func hasBacksteps(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// --- resources ---------------------------------------------------------------

func (v *validator) resources(r *v1.ResourceRequirements, path *field.Path) {
	limitsPath := path.Child("limits")
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		v.resourceQuantity(name, r.Limits[name], limitsPath.Key(string(name)))
	}
	requestsPath := path.Child("requests")
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		request := r.Requests[name]
		fieldPath := requestsPath.Key(string(name))
		v.resourceQuantity(name, request, fieldPath)
		limit, hasLimit := r.Limits[name]
		switch {
		case hasLimit && request.Cmp(limit) > 0:
			v.add(field.Invalid(fieldPath, request.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case isExtendedResource(name) && !hasLimit:
			v.add(field.Forbidden(limitsPath, msgNonOvercommitable))
		case isExtendedResource(name) && request.Cmp(limit) != 0:
			v.add(field.Invalid(fieldPath, request.String(),
				fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		}
	}
}

func (v *validator) resourceQuantity(name v1.ResourceName, q resource.Quantity, path *field.Path) {
	s := string(name)
	switch {
	case !strings.Contains(s, "/"):
		if !isStandardContainerResource(name) {
			v.add(field.Invalid(path, s, "must be a standard resource for containers"))
		}
	case strings.HasSuffix(strings.SplitN(s, "/", 2)[0], "kubernetes.io"):
		v.add(field.Invalid(path, s, "must be a standard resource for containers"))
	default:
		v.invalidEach(path, s, validation.IsQualifiedName(s))
	}
	if q.Sign() < 0 {
		v.add(field.Invalid(path, q.String(), msgNonNegative))
	}
	if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
		v.add(field.Invalid(path, q.String(), "must be an integer"))
	}
}

func isStandardContainerResource(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// isExtendedResource reports whether name is a vendor resource such as
// example.com/gpu: whole units only, never overcommitted.
func isExtendedResource(name v1.ResourceName) bool {
	domain, _, ok := strings.Cut(string(name), "/")
	return ok && !strings.HasSuffix(domain, "kubernetes.io")
}

// --- probes and lifecycle ------------------------------------------------------

type probeKind int

const (
	probeLiveness probeKind = iota + 1
	probeReadiness
	probeStartup
)

// handlerAction is one of the actions of a probe or lifecycle handler,
// which may set only one: its field name, whether it is set, and the check
// of its settings.
type handlerAction struct {
	name  string
	set   bool
	check func(*field.Path)
}

// oneHandler checks the actions of a probe or lifecycle handler at path as
// Kubernetes does: exactly one must be set. The first set one is checked,
// each later one is Forbidden, and none at all is Required.
func (v *validator) oneHandler(path *field.Path, actions ...handlerAction) {
	n := 0
	for _, a := range actions {
		if !a.set {
			continue
		}
		if n > 0 {
			v.add(field.Forbidden(path.Child(a.name), msgOneHandler))
			continue
		}
		n++
		a.check(path.Child(a.name))
	}
	if n == 0 {
		v.add(field.Required(path, "must specify a handler type"))
	}
}

func (v *validator) probe(p *v1.Probe, c *v1.Container, kind probeKind, path *field.Path) {
	v.oneHandler(path,
		handlerAction{"exec", p.Exec != nil, func(fp *field.Path) { v.exec(p.Exec, fp) }},
		handlerAction{"httpGet", p.HTTPGet != nil, func(fp *field.Path) { v.httpGet(p.HTTPGet, c, fp) }},
		handlerAction{"tcpSocket", p.TCPSocket != nil, func(fp *field.Path) { v.portRef(p.TCPSocket.Port, c, fp.Child("port")) }},
		handlerAction{"grpc", p.GRPC != nil, func(fp *field.Path) {
			v.invalidEach(fp.Child("port"), p.GRPC.Port, validation.IsValidPortNum(int(p.GRPC.Port)))
		}},
	)

	if p.InitialDelaySeconds < 0 {
		v.add(field.Invalid(path.Child("initialDelaySeconds"), p.InitialDelaySeconds, msgNonNegative))
	}
	if p.TimeoutSeconds < 0 {
		v.add(field.Invalid(path.Child("timeoutSeconds"), p.TimeoutSeconds, msgNonNegative))
	}
	if p.PeriodSeconds < 1 {
		v.add(field.Invalid(path.Child("periodSeconds"), p.PeriodSeconds, msgPositive))
	}
	switch {
	case p.SuccessThreshold < 1:
		v.add(field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, msgPositive))
	case p.SuccessThreshold != 1 && kind != probeReadiness:
		v.add(field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if p.FailureThreshold < 1 {
		v.add(field.Invalid(path.Child("failureThreshold"), p.FailureThreshold, msgPositive))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case kind == probeReadiness:
			v.add(field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		case *g <= 0:
			v.add(field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		}
	}
}

func (v *validator) lifecycle(l *v1.Lifecycle, c *v1.Container, path *field.Path) {
	if l.PostStart != nil {
		v.lifecycleHandler(l.PostStart, c, path.Child("postStart"))
	}
	if l.PreStop != nil {
		v.lifecycleHandler(l.PreStop, c, path.Child("preStop"))
	}
	if l.StopSignal != nil {
		v.stopSignal(*l.StopSignal, path.Child("stopSignal"))
	}
}

func (v *validator) lifecycleHandler(h *v1.LifecycleHandler, c *v1.Container, path *field.Path) {
	v.oneHandler(path,
		handlerAction{"exec", h.Exec != nil, func(fp *field.Path) { v.exec(h.Exec, fp) }},
		handlerAction{"httpGet", h.HTTPGet != nil, func(fp *field.Path) { v.httpGet(h.HTTPGet, c, fp) }},
		// Kubernetes keeps tcpSocket in LifecycleHandler only for backward
		// compatibility and lets the hook fail when it runs; podward says
		// so up front.
		handlerAction{"tcpSocket", h.TCPSocket != nil, func(fp *field.Path) {
			v.add(field.Forbidden(fp, "not supported as a lifecycle handler: use exec, httpGet or sleep"))
		}},
		handlerAction{"sleep", h.Sleep != nil, func(fp *field.Path) {
			// Kubernetes also caps the sleep at the grace period; podward
			// does not: the grace period ends the hook anyway.
			if h.Sleep.Seconds < 0 {
				v.add(field.Invalid(fp.Child("seconds"), h.Sleep.Seconds, msgNonNegative))
			}
		}},
	)
}

func (v *validator) exec(e *v1.ExecAction, path *field.Path) {
	if len(e.Command) == 0 {
		v.add(field.Required(path.Child("command"), ""))
	}
}

var uriSchemes = []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}

func (v *validator) httpGet(h *v1.HTTPGetAction, c *v1.Container, path *field.Path) {
	if h.Path == "" {
		v.add(field.Required(path.Child("path"), ""))
	}
	v.portRef(h.Port, c, path.Child("port"))
	if !slices.Contains(uriSchemes, h.Scheme) {
		v.add(field.NotSupported(path.Child("scheme"), h.Scheme, uriSchemes))
	}
	for i, header := range h.HTTPHeaders {
		v.invalidEach(path.Child("httpHeaders").Index(i).Child("name"), header.Name, validation.IsHTTPHeaderName(header.Name))
	}
}

// portRef checks the port of an httpGet or tcpSocket action: a number, or
// the name of one of the container's own ports, which is how the kubelet
// resolves it.
func (v *validator) portRef(port intstr.IntOrString, c *v1.Container, path *field.Path) {
	if port.Type == intstr.Int {
		v.invalidEach(path, port.IntVal, validation.IsValidPortNum(int(port.IntVal)))
		return
	}
	if msgs := validation.IsValidPortName(port.StrVal); len(msgs) > 0 {
		v.invalidEach(path, port.StrVal, msgs)
		return
	}
	if !slices.ContainsFunc(c.Ports, func(p v1.ContainerPort) bool { return p.Name == port.StrVal }) {
		v.add(field.Invalid(path, port.StrVal, "must be a port number or the name of one of this container's ports"))
	}
}

// windowsSignals are the only stop signals a Windows pod may use.
var windowsSignals = []v1.Signal{v1.SIGKILL, v1.SIGTERM}

// stopSignal checks lifecycle.stopSignal. Kubernetes requires spec.os.name
// on any pod that sets a stop signal, because the valid signals depend on
// the OS. podward runs Linux containers only, so it takes a pod without
// spec.os to be a Linux pod and accepts any Linux signal there; a pod that
// says spec.os.name: windows is held to the Windows list, as in Kubernetes.
func (v *validator) stopSignal(sig v1.Signal, path *field.Path) {
	if v.windowsOnly {
		if !slices.Contains(windowsSignals, sig) {
			v.add(field.NotSupported(path, sig, windowsSignals))
		}
		return
	}
	if _, ok := SignalNumber(sig); !ok {
		v.add(field.Invalid(path, sig, "must be a Linux signal name such as SIGTERM, SIGINT, SIGQUIT, SIGUSR1 or SIGRTMIN+1"))
	}
}
