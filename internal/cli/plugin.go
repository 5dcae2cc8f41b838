package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podward/podward/internal/model"
)

// PluginName is the executable name under which the podward binary is a
// kubectl plugin: kubectl runs `kubectl-podward` from PATH for `kubectl
// podward ...` (a link to the podward binary: `make kubectl-plugin`).
const PluginName = "kubectl-podward"

// isPlugin says whether the binary was started as the kubectl plugin: kubectl
// execs the plugin with the path it found on PATH as argv[0].
func isPlugin(argv0 string) bool {
	return filepath.Base(argv0) == PluginName
}

// The kubectl plugin reaches what the API server cannot: a defer container
// is not in the pod's spec, so the API server refuses `kubectl logs POD -c
// DEFER` ("container DEFER is not valid for pod POD"). The plugin asks the
// API server for the pod, then reads the log from the node through the
// API server's node proxy:
//
//	GET /api/v1/nodes/{node}/proxy/containerLogs/{namespace}/{pod}/{container}?follow=true&...
//
// the same kubelet endpoint the API server's pods/log calls, with the same
// query; the node (podward) knows the defer containers. It needs the user
// to be allowed `get` on nodes/proxy. The statuses of the defer containers
// are in the pod's annotation pod.alpha.kubernetes.io/defer-container-statuses,
// which `kubectl podward describe` shows as its Defer Containers section.

// pluginOptions is what the plugin's commands share.
type pluginOptions struct {
	s Streams
	// loading and overrides are what the kubeconfig flags set.
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
}

// NewPluginCommand builds the `kubectl podward` command tree. Its flags for
// the cluster and the user are kubectl's own (--kubeconfig, --context,
// -n/--namespace, --server, --token, --as, ...), and KUBECONFIG and the
// current context apply as with kubectl: client-go's clientcmd loading
// rules and override flags, which cli-runtime's ConfigFlags (kubectl's)
// wraps. ConfigFlags itself is not used: its package links kustomize and
// the resource builder, 31 MB more in a binary every container's shim runs.
func NewPluginCommand(s Streams) *cobra.Command {
	o := &pluginOptions{s: s,
		loading:   clientcmd.NewDefaultClientConfigLoadingRules(),
		overrides: &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults},
	}
	root := &cobra.Command{
		Use:         "podward",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl podward"},
		Short:       "Read the logs and statuses of a pod's defer containers on a podward node",
		Long: `kubectl podward reaches what kubectl cannot on a podward node: the defer
containers (annotation pod.alpha.kubernetes.io/defer-containers), which are
not in the pod's spec. Their logs are read from the node through the API
server's node proxy (the user needs get on nodes/proxy); describe shows
their statuses beside what kubectl describe pod shows.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	pf := root.PersistentFlags()
	pf.StringVar(&o.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// Basic authentication is gone from kubectl.
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(o.overrides, pf, names)
	root.AddCommand(newPluginLogsCommand(o), newPluginDescribeCommand(o))
	return root
}

// executePlugin runs the plugin's command line and returns its exit code:
// 1 for every error, printed as kubectl prints it, as kubectl does.
func executePlugin(ctx context.Context, s Streams, args ...string) int {
	cmd := NewPluginCommand(s)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(s.Err, pluginErrorText(ee.Err))
		}
		return ee.Code
	}
	fmt.Fprintln(s.Err, pluginErrorText(err))
	return ExitFailed
}

// pluginErrorText is kubectl's rendering of an error (cmdutil.CheckErr):
// the API server's refusals as "Error from server (Reason): message", a
// connection failure as "Unable to connect to the server: ...", anything
// else after "error: ".
func pluginErrorText(err error) string {
	// A status error wrapped in another error is not one (as in kubectl).
	if se, ok := err.(*apierrors.StatusError); ok {
		if se.ErrStatus.Reason == metav1.StatusReasonUnauthorized {
			return fmt.Sprintf("error: You must be logged in to the server (%s)", se.ErrStatus.Message)
		}
		return errorText(se)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if strings.Contains(ue.Err.Error(), "connection refused") {
			host := ue.URL
			if u, err := url.Parse(ue.URL); err == nil {
				host = u.Host
			}
			return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", host)
		}
		return fmt.Sprintf("Unable to connect to the server: %v", ue.Err)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "error: ") {
		return msg
	}
	return "error: " + err.Error()
}

// pluginUsageError is kubectl's usage error: the message, then where to
// find help.
func pluginUsageError(cmd *cobra.Command, format string, args ...any) error {
	return fmt.Errorf("%s\nSee '%s -h' for help and examples", fmt.Sprintf(format, args...), cmd.CommandPath())
}

// pluginClients are the API clients made from the kubeconfig flags.
type pluginClients struct {
	api kubernetes.Interface
	// http is the API client's HTTP client, for requests the typed client
	// has no call for, with userAgent.
	http      *http.Client
	userAgent string
	// namespace is -n, else the context's, else default.
	namespace string
}

func (o *pluginOptions) clients() (*pluginClients, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loading, o.overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, err
	}
	c := &pluginClients{userAgent: cfg.UserAgent}
	if c.userAgent == "" {
		c.userAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.namespace, _, err = loader.Namespace(); err != nil {
		return nil, err
	}
	if c.http, err = rest.HTTPClientFor(cfg); err != nil {
		return nil, err
	}
	if c.api, err = kubernetes.NewForConfigAndClient(cfg, c.http); err != nil {
		return nil, err
	}
	return c, nil
}

// pluginLogsOptions are `kubectl podward logs`' flags, kubectl logs' own.
type pluginLogsOptions struct {
	container              string
	follow, previous       bool
	timestamps             bool
	tail, limitBytes       int64
	since                  time.Duration
	sinceTime              string
	containerFromFlag      bool
	pod, containerFromArgs string
}

const pluginLogsUse = "logs [-f] [-p] POD [-c CONTAINER]"

func newPluginLogsCommand(o *pluginOptions) *cobra.Command {
	lo := &pluginLogsOptions{tail: -1}
	cmd := &cobra.Command{
		Use:   pluginLogsUse,
		Short: "Print the logs of a container in a pod, defer containers included",
		Long: `Print the logs of a container of a pod on a podward node, a defer container
included, as kubectl logs does. The log is read from the node through the API
server's node proxy (/api/v1/nodes/NODE/proxy/containerLogs/NS/POD/CONTAINER),
so the user needs get on nodes/proxy. It is there while the pod's API object
is: a deleted pod's defer containers can be read while it terminates.`,
		Example: `  kubectl podward logs web -c cleanup
  kubectl podward logs -f web -c cleanup
  kubectl podward logs web -c cleanup --previous --tail 20 -n jobs`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lo.complete(cmd, args); err != nil {
				return err
			}
			return o.runLogs(cmd.Context(), lo)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&lo.container, "container", "c", "", "Print the logs of this container (a defer container too)")
	f.BoolVarP(&lo.follow, "follow", "f", false, "Specify if the logs should be streamed.")
	f.BoolVarP(&lo.previous, "previous", "p", false, "If true, print the logs for the previous instance of the container in a pod if it exists.")
	f.BoolVar(&lo.timestamps, "timestamps", false, "Include timestamps on each line in the log output")
	f.Int64Var(&lo.tail, "tail", -1, "Lines of recent log file to display. Defaults to -1, showing all log lines.")
	f.Int64Var(&lo.limitBytes, "limit-bytes", 0, "Maximum bytes of logs to return. Defaults to no limit.")
	f.DurationVar(&lo.since, "since", 0, "Only return logs newer than a relative duration like 5s, 2m, or 3h. Defaults to all logs. Only one of since-time / since may be used.")
	f.StringVar(&lo.sinceTime, "since-time", "", "Only return logs after a specific date (RFC3339). Defaults to all logs. Only one of since-time / since may be used.")
	return cmd
}

// complete reads the arguments and checks the flags as kubectl logs does
// (its Complete and Validate), with its messages.
func (lo *pluginLogsOptions) complete(cmd *cobra.Command, args []string) error {
	lo.containerFromFlag = cmd.Flags().Changed("container")
	usage := fmt.Sprintf("expected '%s'.\nPOD is a required argument for the logs command", pluginLogsUse)
	switch len(args) {
	case 1:
		lo.pod = args[0]
	case 2:
		lo.pod, lo.containerFromArgs = args[0], args[1]
	default:
		return pluginUsageError(cmd, "%s", usage)
	}
	if kind, name, ok := strings.Cut(lo.pod, "/"); ok {
		if !isPodResource(kind) {
			return fmt.Errorf("cannot get the logs from %s: kubectl podward reads pods only", kind)
		}
		lo.pod = name
	}
	switch {
	case lo.pod == "":
		return pluginUsageError(cmd, "%s", usage)
	case lo.since != 0 && lo.sinceTime != "":
		return errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified")
	case lo.containerFromFlag && lo.containerFromArgs != "":
		return errors.New("only one of -c or an inline [CONTAINER] arg is allowed")
	case lo.limitBytes < 0:
		return errors.New("--limit-bytes must be greater than 0")
	case lo.since < 0:
		return errors.New("--since must be greater than 0")
	case lo.tail < -1:
		return errors.New("--tail must be greater than or equal to -1")
	}
	if lo.sinceTime != "" {
		if _, err := time.Parse(time.RFC3339, lo.sinceTime); err != nil {
			return fmt.Errorf("--since-time: %w", err)
		}
	}
	if lo.containerFromArgs != "" {
		lo.container = lo.containerFromArgs
	}
	return nil
}

// query is the node's containerLogs query, as the API server's pods/log
// builds it (LogLocation in kubernetes' pkg/registry/core/pod/strategy.go).
func (lo *pluginLogsOptions) query() url.Values {
	q := url.Values{}
	if lo.follow {
		q.Set("follow", "true")
	}
	if lo.previous {
		q.Set("previous", "true")
	}
	if lo.timestamps {
		q.Set("timestamps", "true")
	}
	if lo.since != 0 {
		// kubectl rounds up to whole seconds.
		q.Set("sinceSeconds", strconv.FormatInt(int64((lo.since+time.Second-1)/time.Second), 10))
	}
	if lo.sinceTime != "" {
		q.Set("sinceTime", lo.sinceTime)
	}
	if lo.tail != -1 {
		q.Set("tailLines", strconv.FormatInt(lo.tail, 10))
	}
	if lo.limitBytes != 0 {
		q.Set("limitBytes", strconv.FormatInt(lo.limitBytes, 10))
	}
	return q
}

// runLogs finds the pod, its container and its node, then copies the
// node's answer to Out; with -f until the node ends it (the container
// instance ended) or the command is interrupted.
func (o *pluginOptions) runLogs(ctx context.Context, lo *pluginLogsOptions) error {
	c, err := o.clients()
	if err != nil {
		return err
	}
	pod, err := c.api.CoreV1().Pods(c.namespace).Get(ctx, lo.pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// kubectl logs' wording (not a status error: printed after "error: ").
		return fmt.Errorf("error from server (NotFound): %w in namespace %q", err, c.namespace)
	}
	if err != nil {
		return err
	}
	container, err := logContainer(pod, lo.container, o.s.Err)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		// Not scheduled: nothing to read, and no error, as with the API
		// server's pods/log.
		return nil
	}
	u := c.api.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", pod.Spec.NodeName, "proxy", "containerLogs", pod.Namespace, pod.Name, container).
		URL()
	u.RawQuery = lo.query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode > http.StatusPartialContent {
		return proxyError(resp, pod.Name)
	}
	if _, err := io.Copy(o.s.Out, resp.Body); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// maxErrorBody is the most of an error answer read, the API server's.
const maxErrorBody = 50000

// proxyError turns a refusal into the error kubectl logs would print for
// it. The API server's own (no nodes/proxy permission, the node unknown or
// unreachable) is a Status; the node's, passed on by the proxy, is text,
// which the API server's pods/log turns into a status error by its code
// (GenericHttpResponseChecker in k8s.io/apiserver's
// pkg/registry/generic/rest/response_checker.go): so is it here, so that
// the same refusal reads the same as with kubectl logs.
func proxyError(resp *http.Response, pod string) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var st metav1.Status
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") &&
		json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		return &apierrors.StatusError{ErrStatus: st}
	}
	text := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", schema.GroupResource{Resource: "pods"}, pod, text, 0, false)
}

// logContainer picks the container whose log is read, as kubectl logs
// picks it (FindOrDefaultContainerByName in kubectl's
// pkg/cmd/util/podcmd/podcmd.go), defer containers included: the one named,
// else the kubectl.kubernetes.io/default-container annotation's, else the
// first regular container, saying so on warn when the pod has others.
func logContainer(pod *v1.Pod, name string, warn io.Writer) (string, error) {
	var deferred []v1.Container
	if mp, err := model.FromV1(pod); err == nil {
		deferred = mp.Defer
	}
	has := func(name string) bool {
		for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers, deferred} {
			for _, c := range list {
				if c.Name == name {
					return true
				}
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	if name == "" {
		if d := pod.Annotations[defaultContainerAnnotation]; d != "" {
			if has(d) {
				return d, nil
			}
			fmt.Fprintf(warn, "Default container name %q not found in pod %s\n", d, pod.Name)
		}
	}
	if name != "" {
		if !has(name) {
			return "", fmt.Errorf("container %s is not valid for pod %s out of: %s", name, pod.Name, allContainerNames(pod, deferred))
		}
		return name, nil
	}
	if len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("pod %s/%s does not have any containers", pod.Namespace, pod.Name)
	}
	first := pod.Spec.Containers[0].Name
	if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 || len(deferred) > 0 {
		fmt.Fprintf(warn, "Defaulted container %q out of: %s\n", first, allContainerNames(pod, deferred))
	}
	return first, nil
}

// defaultContainerAnnotation names the container kubectl logs and exec
// default to.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// allContainerNames is kubectl's list of a pod's containers (regular,
// ephemeral "(ephem)", init "(init)"), then the defer containers, marked
// "(defer)".
func allContainerNames(pod *v1.Pod, deferred []v1.Container) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name+" (ephem)")
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	for _, c := range deferred {
		names = append(names, c.Name+" (defer)")
	}
	return strings.Join(names, ", ")
}

func newPluginDescribeCommand(o *pluginOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe [pod] NAME...",
		Short: "Show a pod as kubectl describe pod does, with its defer containers' statuses",
		Long: `Describe prints each named pod (every pod of the namespace for "describe pod"
without a name) as kubectl describe pod does, with a Defer Containers section
after the containers: each defer container's state, last state, restarts and
mounts, from the statuses the podward node publishes in the pod's annotation
pod.alpha.kubernetes.io/defer-container-statuses.`,
		Example: `  kubectl podward describe web
  kubectl podward describe pod/web -n jobs`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runDescribe(cmd, args)
		},
	}
}

// describeNames reads describe's arguments: names, "pod NAME...", or
// "pod/NAME...". all is true for "pod" alone: every pod of the namespace.
func describeNames(args []string) (names []string, all bool, err error) {
	if len(args) == 0 {
		return nil, false, errors.New("you must specify the name of a pod to describe: kubectl podward describe POD")
	}
	if isPodResource(args[0]) || strings.Contains(args[0], "/") {
		names, err := parsePodArgs(args)
		return names, err == nil && len(names) == 0, err
	}
	return args, false, nil
}

func (o *pluginOptions) runDescribe(cmd *cobra.Command, args []string) error {
	names, all, err := describeNames(args)
	if err != nil {
		return pluginUsageError(cmd, "%s", err)
	}
	ctx := cmd.Context()
	c, err := o.clients()
	if err != nil {
		return err
	}
	cs, ns := c.api, c.namespace
	var pods []*v1.Pod
	if all {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			fmt.Fprintf(o.s.Err, "No resources found in %s namespace.\n", ns)
			return nil
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	for _, name := range names {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods = append(pods, p)
	}
	for i, p := range pods {
		// kubectl describe's selector for a pod's events.
		events, err := cs.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + p.Name + ",involvedObject.namespace=" + p.Namespace +
				",involvedObject.kind=Pod,involvedObject.uid=" + string(p.UID),
		})
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprint(o.s.Out, "\n\n")
		}
		if _, err := io.WriteString(o.s.Out, describePod(p, events.Items, time.Now())); err != nil {
			return err
		}
	}
	return nil
}
