package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/model"
)

func newDescribeCommand(s Streams, api *apiOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe pod|configmap|secret [NAME...]",
		Short: "Show a pod in detail, as kubectl describe pod does, defer containers and events included",
		Long: `Describe prints each named pod (every pod of the namespace without a name) as
kubectl describe pod does: its metadata, status and IP, its init containers,
containers and defer containers with their state, last state, restarts and
mounts, its conditions, volumes, and the events recorded for it.

describe configmap|cm and describe secret print them as kubectl does; a
Secret's values are never shown, only their sizes in bytes.`,
		Example: `  podward describe pod web
  podward describe pod/web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDescribe(cmd.Context(), s, api, args)
		},
	}
}

func runDescribe(ctx context.Context, s Streams, api *apiOptions, args []string) error {
	if kind, names, ok, err := parseObjectArgs(args); ok {
		if err != nil {
			return usageError(err)
		}
		return runDescribeObjects(ctx, s, api, kind, names)
	}
	names, err := parsePodArgs(args)
	if err != nil {
		return usageError(err)
	}
	c := api.client()
	defer c.Close()
	var pods []*v1.Pod
	if len(names) == 0 {
		list, err := c.ListPods(ctx, api.namespace, client.ListOptions{})
		if err != nil {
			return report(s, err)
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		if len(pods) == 0 {
			fmt.Fprintf(s.Err, "No resources found in %s namespace.\n", api.namespace)
			return nil
		}
	} else {
		for _, name := range names {
			p, err := c.GetPod(ctx, api.namespace, name)
			if err != nil {
				return report(s, err)
			}
			pods = append(pods, p)
		}
	}
	for i, p := range pods {
		events, err := c.ListEvents(ctx, p.Namespace, client.ListOptions{
			FieldSelector: "involvedObject.name=" + p.Name + ",involvedObject.uid=" + string(p.UID),
		})
		if err != nil {
			return report(s, err)
		}
		if i > 0 {
			fmt.Fprint(s.Out, "\n\n")
		}
		if _, err := io.WriteString(s.Out, describePod(p, events.Items, time.Now())); err != nil {
			return err
		}
	}
	return nil
}

// prefixWriter writes kubectl describe's indented "Key:\tvalue" lines into
// a tab writer; each level indents by two spaces. Every line is written
// through cli-runtime's printers.WriteEscaped, as kubectl describe's own
// PrefixWriter does since 1.26: ESC and CR from a container (a termination
// message, an event's message) show as "^[" and "\r" instead of driving the
// reader's terminal.
type prefixWriter struct {
	tw *tabwriter.Writer
}

func (w prefixWriter) write(level int, format string, args ...any) {
	_ = printers.WriteEscaped(w.tw, fmt.Sprintf(strings.Repeat("  ", level)+format, args...))
}

// describePod renders a pod the way kubectl describe pod does, with podward's
// Defer Containers section after the containers.
func describePod(p *v1.Pod, events []v1.Event, now time.Time) string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	w := prefixWriter{tw: tw}
	describeMeta(w, p)
	describeStatus(w, p, now)
	describeIPs(w, p)

	if len(p.Spec.InitContainers) > 0 {
		describeContainers(w, "Init Containers", p.Spec.InitContainers, p.Status.InitContainerStatuses, p)
	}
	describeContainers(w, "Containers", p.Spec.Containers, p.Status.ContainerStatuses, p)
	if mp, err := model.FromV1(p); err == nil && len(mp.Defer) > 0 {
		describeContainers(w, "Defer Containers", mp.Defer, mp.DeferStatuses(), p)
	}

	describeConditions(w, p)
	describeVolumes(w, p.Spec.Volumes)
	w.write(0, "QoS Class:\t%s\n", qosClass(p))
	writeMap(w, "Node-Selectors", p.Spec.NodeSelector)
	tolerations := make([]string, 0, len(p.Spec.Tolerations))
	for _, t := range p.Spec.Tolerations {
		tolerations = append(tolerations, toleration(t))
	}
	writeList(w, "Tolerations", tolerations)
	describeEvents(w, events, now)
	_ = tw.Flush()
	return buf.String()
}

// describeMeta writes the lines from Name to Annotations.
func describeMeta(w prefixWriter, p *v1.Pod) {
	w.write(0, "Name:\t%s\n", p.Name)
	w.write(0, "Namespace:\t%s\n", p.Namespace)
	if p.Spec.Priority != nil {
		w.write(0, "Priority:\t%d\n", *p.Spec.Priority)
	}
	if p.Spec.ServiceAccountName != "" {
		w.write(0, "Service Account:\t%s\n", p.Spec.ServiceAccountName)
	}
	if p.Spec.NodeName == "" {
		w.write(0, "Node:\t<none>\n")
	} else {
		w.write(0, "Node:\t%s\n", p.Spec.NodeName+"/"+p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		w.write(0, "Start Time:\t%s\n", p.Status.StartTime.Format(time.RFC1123Z))
	}
	writeMap(w, "Labels", p.Labels)
	writeAnnotations(w, p.Annotations)
}

// describeStatus writes Status (Terminating, with its grace period, while a
// deletion goes on), Reason and Message.
func describeStatus(w prefixWriter, p *v1.Pod, now time.Time) {
	if p.DeletionTimestamp != nil && p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
		w.write(0, "Status:\tTerminating (lasts %s)\n", since(*p.DeletionTimestamp, now))
		if p.DeletionGracePeriodSeconds != nil {
			w.write(0, "Termination Grace Period:\t%ds\n", *p.DeletionGracePeriodSeconds)
		}
	} else {
		w.write(0, "Status:\t%s\n", p.Status.Phase)
	}
	if p.Status.Reason != "" {
		w.write(0, "Reason:\t%s\n", p.Status.Reason)
	}
	if p.Status.Message != "" {
		w.write(0, "Message:\t%s\n", p.Status.Message)
	}
}

// describeIPs writes IP and the IPs list.
func describeIPs(w prefixWriter, p *v1.Pod) {
	w.write(0, "IP:\t%s\n", p.Status.PodIP)
	ips := make([]string, 0, len(p.Status.PodIPs))
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = append(ips, p.Status.PodIP)
	}
	if len(ips) == 0 {
		w.write(0, "IPs:\t<none>\n")
		return
	}
	w.write(0, "IPs:\n")
	for _, ip := range ips {
		w.write(1, "IP:\t%s\n", ip)
	}
}

// describeConditions writes the readiness gates and the conditions, when
// there are any.
func describeConditions(w prefixWriter, p *v1.Pod) {
	if len(p.Spec.ReadinessGates) > 0 {
		w.write(0, "Readiness Gates:\n  Type\tStatus\n")
		for _, g := range p.Spec.ReadinessGates {
			status := "<none>"
			for _, c := range p.Status.Conditions {
				if c.Type == g.ConditionType {
					status = string(c.Status)
				}
			}
			w.write(1, "%v \t%v \n", g.ConditionType, status)
		}
	}
	if len(p.Status.Conditions) > 0 {
		w.write(0, "Conditions:\n  Type\tStatus\n")
		for _, c := range p.Status.Conditions {
			w.write(1, "%v \t%v \n", c.Type, c.Status)
		}
	}
}

// hiddenAnnotations are not listed: the defer containers have their own
// sections.
var hiddenAnnotations = map[string]bool{
	model.DeferContainersAnnotation:                    true,
	model.DeferContainerStatusesAnnotation:             true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// maxAnnotationLen is where kubectl folds an annotation's value.
const maxAnnotationLen = 140

// writeList writes kubectl describe's "Title:" line with items in its value
// column, one per line, or <none> when there are none. An item may span
// lines, each further one starting with a tab to stay in that column.
func writeList(w prefixWriter, title string, items []string) {
	if len(items) == 0 {
		w.write(0, "%s:\t<none>\n", title)
		return
	}
	w.write(0, "%s:\t", title)
	for i, item := range items {
		if i > 0 {
			w.write(0, "\t")
		}
		w.write(0, "%s\n", item)
	}
}

// sortedKeys are m's keys but those in skip, sorted.
func sortedKeys(m map[string]string, skip map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// writeMap writes a map such as the labels: key=value, sorted by key.
func writeMap(w prefixWriter, title string, m map[string]string) {
	keys := sortedKeys(m, nil)
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		items = append(items, k+"="+m[k])
	}
	writeList(w, title, items)
}

// writeAnnotations writes the annotations but the hidden ones, sorted by
// key: "key: value", or the key alone with the value's lines below it,
// each cut at maxAnnotationLen, when the value is long or has several.
func writeAnnotations(w prefixWriter, m map[string]string) {
	keys := sortedKeys(m, hiddenAnnotations)
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		value := strings.TrimSuffix(m[k], "\n")
		if len(value)+len(k)+2 <= maxAnnotationLen && !strings.Contains(value, "\n") {
			items = append(items, k+": "+value)
			continue
		}
		item := k + ":"
		for _, line := range strings.Split(value, "\n") {
			if len(line) > maxAnnotationLen-2 {
				line = line[:maxAnnotationLen-5] + "..."
			}
			item += "\n\t  " + line
		}
		items = append(items, item)
	}
	writeList(w, "Annotations", items)
}

func describeContainers(w prefixWriter, label string, containers []v1.Container, statuses []v1.ContainerStatus, p *v1.Pod) {
	byName := map[string]v1.ContainerStatus{}
	for _, st := range statuses {
		byName[st.Name] = st
	}
	if len(containers) == 0 {
		w.write(0, "%s: <none>\n", label)
	} else {
		w.write(0, "%s:\n", label)
	}
	for _, c := range containers {
		st, ok := byName[c.Name]
		w.write(1, "%s:\n", c.Name)
		if ok {
			w.write(2, "Container ID:\t%s\n", st.ContainerID)
		}
		w.write(2, "Image:\t%s\n", c.Image)
		if ok {
			w.write(2, "Image ID:\t%s\n", st.ImageID)
		}
		ports, hostPorts := containerPorts(c.Ports)
		writePorts(w, "Port", ports)
		writePorts(w, "Host Port", hostPorts)
		writeLines(w, "Command", c.Command)
		writeLines(w, "Args", c.Args)
		if ok {
			describeState(w, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				describeState(w, "Last State", st.LastTerminationState)
			}
			w.write(2, "Ready:\t%s\n", boolText(st.Ready))
			w.write(2, "Restart Count:\t%d\n", st.RestartCount)
		}
		describeResources(w, c.Resources)
		if len(c.EnvFrom) > 0 {
			describeEnvFrom(w, c)
		}
		describeEnv(w, c, p)
		if len(c.VolumeMounts) == 0 {
			w.write(2, "Mounts:\t<none>\n")
		} else {
			w.write(2, "Mounts:\n")
			mounts := slices.Clone(c.VolumeMounts)
			sort.SliceStable(mounts, func(i, j int) bool { return mounts[i].MountPath < mounts[j].MountPath })
			for _, m := range mounts {
				flags := []string{"rw"}
				if m.ReadOnly {
					flags[0] = "ro"
				}
				if m.SubPath != "" {
					flags = append(flags, fmt.Sprintf("path=%q", m.SubPath))
				}
				w.write(3, "%s from %s (%s)\n", m.MountPath, m.Name, strings.Join(flags, ","))
			}
		}
	}
}

func containerPorts(ports []v1.ContainerPort) (string, string) {
	var cp, hp []string
	for _, p := range ports {
		cp = append(cp, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
		hp = append(hp, fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
	}
	return strings.Join(cp, ", "), strings.Join(hp, ", ")
}

// writePorts writes a container's ports as kubectl does: "Ports" when there
// are several, else "Port" with the one or <none>.
func writePorts(w prefixWriter, title, ports string) {
	if strings.Contains(ports, ",") {
		w.write(2, "%ss:\t%s\n", title, ports)
		return
	}
	w.write(2, "%s:\t%s\n", title, orNone(ports))
}

func writeLines(w prefixWriter, title string, items []string) {
	if len(items) == 0 {
		return
	}
	w.write(2, "%s:\n", title)
	for _, item := range items {
		for _, line := range strings.Split(item, "\n") {
			w.write(3, "%s\n", line)
		}
	}
}

func describeState(w prefixWriter, title string, st v1.ContainerState) {
	switch {
	case st.Running != nil:
		w.write(2, "%s:\tRunning\n", title)
		w.write(3, "Started:\t%s\n", st.Running.StartedAt.Format(time.RFC1123Z))
	case st.Terminated != nil:
		t := st.Terminated
		w.write(2, "%s:\tTerminated\n", title)
		if t.Reason != "" {
			w.write(3, "Reason:\t%s\n", t.Reason)
		}
		if t.Message != "" {
			w.write(3, "Message:\t%s\n", t.Message)
		}
		w.write(3, "Exit Code:\t%d\n", t.ExitCode)
		if t.Signal > 0 {
			w.write(3, "Signal:\t%d\n", t.Signal)
		}
		w.write(3, "Started:\t%s\n", t.StartedAt.Format(time.RFC1123Z))
		w.write(3, "Finished:\t%s\n", t.FinishedAt.Format(time.RFC1123Z))
	default:
		w.write(2, "%s:\tWaiting\n", title)
		if st.Waiting != nil && st.Waiting.Reason != "" {
			w.write(3, "Reason:\t%s\n", st.Waiting.Reason)
		}
	}
}

func describeResources(w prefixWriter, r v1.ResourceRequirements) {
	for _, part := range []struct {
		title string
		list  v1.ResourceList
	}{{"Limits", r.Limits}, {"Requests", r.Requests}} {
		if len(part.list) == 0 {
			continue
		}
		w.write(2, "%s:\n", part.title)
		names := make([]string, 0, len(part.list))
		for n := range part.list {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := part.list[v1.ResourceName(n)]
			w.write(3, "%s:\t%s\n", n, q.String())
		}
	}
}

// describeEnv lists a container's environment as kubectl does; a fieldRef
// is resolved for the pod fields podward knows.
func describeEnv(w prefixWriter, c v1.Container, p *v1.Pod) {
	if len(c.Env) == 0 {
		w.write(2, "Environment:\t<none>\n")
		return
	}
	w.write(2, "Environment:\n")
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			for i, line := range strings.Split(e.Value, "\n") {
				if i == 0 {
					w.write(3, "%s:\t%s\n", e.Name, line)
				} else {
					w.write(3, "\t%s\n", line)
				}
			}
		case e.ValueFrom.FieldRef != nil:
			ref := e.ValueFrom.FieldRef
			w.write(3, "%s:\t%s (%s:%s)\n", e.Name, podField(p, ref.FieldPath), ref.APIVersion, ref.FieldPath)
		case e.ValueFrom.ResourceFieldRef != nil:
			res := e.ValueFrom.ResourceFieldRef.Resource
			w.write(3, "%s:\t%s (%s)\n", e.Name, resourceFieldValue(e.ValueFrom.ResourceFieldRef, &c), res)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			w.write(3, "%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			w.write(3, "%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		default:
			w.write(3, "%s:\t\n", e.Name)
		}
	}
}

func podField(p *v1.Pod, path string) string {
	switch path {
	case "metadata.name":
		return p.Name
	case "metadata.namespace":
		return p.Namespace
	case "metadata.uid":
		return string(p.UID)
	case "spec.nodeName":
		return p.Spec.NodeName
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName
	case "status.hostIP":
		return p.Status.HostIP
	case "status.podIP":
		return p.Status.PodIP
	}
	return ""
}

func describeVolumes(w prefixWriter, vols []v1.Volume) {
	if len(vols) == 0 {
		w.write(0, "Volumes:\t<none>\n")
		return
	}
	w.write(0, "Volumes:\n")
	for _, vol := range vols {
		w.write(1, "%s:\n", vol.Name)
		switch {
		case vol.HostPath != nil:
			typ := "<none>"
			if vol.HostPath.Type != nil && *vol.HostPath.Type != "" {
				typ = string(*vol.HostPath.Type)
			}
			w.write(2, "Type:\tHostPath (bare host directory volume)\n")
			w.write(2, "Path:\t%s\n", vol.HostPath.Path)
			w.write(2, "HostPathType:\t%s\n", typ)
		case vol.EmptyDir != nil:
			limit := "<unset>"
			if vol.EmptyDir.SizeLimit != nil && vol.EmptyDir.SizeLimit.Cmp(resource.Quantity{}) > 0 {
				limit = vol.EmptyDir.SizeLimit.String()
			}
			w.write(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n")
			w.write(2, "Medium:\t%s\n", vol.EmptyDir.Medium)
			w.write(2, "SizeLimit:\t%s\n", limit)
		case vol.ConfigMap != nil:
			w.write(2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n")
			w.write(2, "Name:\t%s\n", vol.ConfigMap.Name)
			w.write(2, "Optional:\t%v\n", isTrue(vol.ConfigMap.Optional))
		case vol.Secret != nil:
			w.write(2, "Type:\tSecret (a volume populated by a Secret)\n")
			w.write(2, "SecretName:\t%s\n", vol.Secret.SecretName)
			w.write(2, "Optional:\t%v\n", isTrue(vol.Secret.Optional))
		case vol.DownwardAPI != nil:
			w.write(2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n")
			w.write(2, "Items:\n")
			describeDownwardAPIItems(w, vol.DownwardAPI.Items)
		case vol.Projected != nil:
			w.write(2, "Type:\tProjected (a volume that contains injected data from multiple sources)\n")
			describeProjections(w, vol.Projected.Sources)
		default:
			w.write(2, "<unknown>\n")
		}
	}
}

// describeDownwardAPIItems lists a downward API volume's files as kubectl
// does: what each holds, then its path.
func describeDownwardAPIItems(w prefixWriter, items []v1.DownwardAPIVolumeFile) {
	for _, item := range items {
		if item.FieldRef != nil {
			w.write(3, "%s -> %s\n", item.FieldRef.FieldPath, item.Path)
		}
		if item.ResourceFieldRef != nil {
			w.write(3, "%s -> %s\n", item.ResourceFieldRef.Resource, item.Path)
		}
	}
}

// describeProjections is a projected volume's sources, one or two lines
// each, as kubectl shows them.
func describeProjections(w prefixWriter, sources []v1.VolumeProjection) {
	for _, src := range sources {
		switch {
		case src.Secret != nil:
			w.write(2, "SecretName:\t%s\n", src.Secret.Name)
			w.write(2, "Optional:\t%v\n", isTrue(src.Secret.Optional))
		case src.DownwardAPI != nil:
			w.write(2, "DownwardAPI:\ttrue\n")
		case src.ConfigMap != nil:
			w.write(2, "ConfigMapName:\t%s\n", src.ConfigMap.Name)
			w.write(2, "Optional:\t%v\n", isTrue(src.ConfigMap.Optional))
		case src.ServiceAccountToken != nil:
			seconds := int64(3600)
			if src.ServiceAccountToken.ExpirationSeconds != nil {
				seconds = *src.ServiceAccountToken.ExpirationSeconds
			}
			w.write(2, "TokenExpirationSeconds:\t%d\n", seconds)
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// qosClass is the pod's quality of service class, computed as Kubernetes
// does from its containers' requests and limits (cpu and memory).
func qosClass(p *v1.Pod) v1.PodQOSClass {
	containers := append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
	isGuaranteed, anySet := true, false
	for _, c := range containers {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				anySet = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				isGuaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return v1.PodQOSBestEffort
	case isGuaranteed:
		return v1.PodQOSGuaranteed
	default:
		return v1.PodQOSBurstable
	}
}

// toleration renders a toleration as kubectl describe does.
func toleration(t v1.Toleration) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + string(t.Effect)
	}
	if t.Operator == v1.TolerationOpExists && t.Value == "" {
		if t.Key != "" {
			s += " "
		}
		s += "op=Exists"
	}
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
	}
	return s
}

// describeEvents is kubectl's events table: Type Reason Age From Message,
// oldest first.
func describeEvents(w prefixWriter, events []v1.Event, now time.Time) {
	if len(events) == 0 {
		w.write(0, "Events:\t<none>\n")
		return
	}
	// A table of its own, not aligned with what came before.
	_ = w.tw.Flush()
	items := slices.Clone(events)
	sortEvents(items)
	w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
	w.write(1, "----\t------\t----\t----\t-------\n")
	for i := range items {
		e := &items[i]
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		w.write(1, "%s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, eventInterval(e, now), from, strings.TrimSpace(e.Message))
	}
}

func boolText(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
