package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
)

// fakeAPIServer is the part of the Kubernetes API the plugin uses: pods,
// events, and the node proxy to the kubelet's containerLogs, which answers
// with nodeLogs (or nodeStatus/nodeBody when set).
type fakeAPIServer struct {
	srv  *httptest.Server
	pods map[string]*v1.Pod // by namespace/name
	// events are returned for every events list.
	events []v1.Event
	// The node's answer: status (200 when 0), body.
	nodeStatus int
	nodeBody   string
	// nodeContentType is the answer's Content-Type (text/plain when "").
	nodeContentType string

	mu       sync.Mutex
	requests []*url.URL // the node proxy requests
	selector string     // the last events field selector
}

func newFakeAPIServer(t *testing.T, pods ...*v1.Pod) *fakeAPIServer {
	f := &fakeAPIServer{pods: map[string]*v1.Pod{}}
	for _, p := range pods {
		f.pods[p.Namespace+"/"+p.Name] = p
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := f.pods[r.PathValue("ns")+"/"+r.PathValue("name")]
		if !ok {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", r.PathValue("name")))
			return
		}
		writeJSON(w, p)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, p := range f.pods {
			if p.Namespace == r.PathValue("ns") {
				list.Items = append(list.Items, *p)
			}
		}
		writeJSON(w, list)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.selector = r.URL.Query().Get("fieldSelector")
		f.mu.Unlock()
		writeJSON(w, &v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: f.events})
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}/proxy/containerLogs/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL)
		f.mu.Unlock()
		ct := f.nodeContentType
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		if f.nodeStatus != 0 {
			w.WriteHeader(f.nodeStatus)
		}
		_, _ = w.Write([]byte(f.nodeBody))
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSON(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func (f *fakeAPIServer) nodeRequests() []*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*url.URL(nil), f.requests...)
}

// kubeconfig writes a kubeconfig for the fake server whose context's
// namespace is ns ("" for none).
func (f *fakeAPIServer) kubeconfig(t *testing.T, ns string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q}
users:
- name: me
  user: {token: secret}
contexts:
- name: fake
  context: {cluster: fake, user: me, namespace: %q}
current-context: fake
`, f.srv.URL, ns)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPlugin runs `kubectl podward ARGS` and returns its exit code and
// streams.
func runPlugin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	code := executePlugin(ctx, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args...)
	return code, out.String(), errOut.String()
}

// deferPod is a pod bound to node n1 with an init container, two regular
// containers and a defer container, "cleanup", that has completed.
func deferPod(ns string) *v1.Pod {
	st, _ := json.Marshal([]v1.ContainerStatus{{Name: "cleanup", RestartCount: 1, State: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}})
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-1", Annotations: map[string]string{
			model.DeferContainersAnnotation:        `[{"name": "cleanup", "image": "busybox", "command": ["echo", "bye"]}]`,
			model.DeferContainerStatusesAnnotation: string(st),
		}},
		Spec: v1.PodSpec{
			NodeName:       "n1",
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []v1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodSucceeded},
	}
}

func TestIsPlugin(t *testing.T) {
	for argv0, want := range map[string]bool{
		"/usr/local/bin/kubectl-podward": true, // kubectl execs the path it found on PATH
		"kubectl-podward":                true,
		"./bin/podward":                  false,
		"/usr/local/bin/podward":         false,
		"kubectl-podward-logs":           false,
	} {
		if got := isPlugin(argv0); got != want {
			t.Errorf("isPlugin(%q) = %v, want %v", argv0, got, want)
		}
	}
}

// TestPluginLogsThroughNodeProxy: the log of a defer container, which the
// API server's pods/log refuses, is read from the pod's node through the
// node proxy, with kubectl logs' query (as the API server's LogLocation in
// kubernetes' pkg/registry/core/pod/strategy.go passes it on).
func TestPluginLogsThroughNodeProxy(t *testing.T) {
	for name, tc := range map[string]struct {
		args      []string
		wantPath  string
		wantQuery url.Values
	}{
		"defer container": {
			args:      []string{"web", "-c", "cleanup"},
			wantPath:  "/api/v1/nodes/n1/proxy/containerLogs/default/web/cleanup",
			wantQuery: url.Values{},
		},
		"inline container, every option": {
			args:     []string{"pod/web", "cleanup", "-f", "-p", "--tail", "5", "--timestamps", "--limit-bytes", "100", "--since", "1500ms"},
			wantPath: "/api/v1/nodes/n1/proxy/containerLogs/default/web/cleanup",
			wantQuery: url.Values{"follow": {"true"}, "previous": {"true"}, "tailLines": {"5"}, "timestamps": {"true"},
				"limitBytes": {"100"}, "sinceSeconds": {"2"}},
		},
		"since-time, tail 0": {
			args:      []string{"web", "-c", "app", "--since-time", "2026-12-01T10:00:00Z", "--tail", "0"},
			wantPath:  "/api/v1/nodes/n1/proxy/containerLogs/default/web/app",
			wantQuery: url.Values{"sinceTime": {"2026-12-01T10:00:00Z"}, "tailLines": {"0"}},
		},
		"namespace flag": {
			args:      []string{"web", "-c", "cleanup", "-n", "jobs"},
			wantPath:  "/api/v1/nodes/n1/proxy/containerLogs/jobs/web/cleanup",
			wantQuery: url.Values{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPIServer(t, deferPod("default"), deferPod("jobs"))
			f.nodeBody = "bye\n"
			code, out, errOut := runPlugin(t, append([]string{"logs", "--kubeconfig", f.kubeconfig(t, "")}, tc.args...)...)
			if code != 0 || out != "bye\n" || errOut != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0, the node's answer, nothing", code, out, errOut)
			}
			reqs := f.nodeRequests()
			if len(reqs) != 1 {
				t.Fatalf("node proxy requests: %v, want one", reqs)
			}
			if reqs[0].Path != tc.wantPath || reqs[0].Query().Encode() != tc.wantQuery.Encode() {
				t.Errorf("node proxy request %s?%s, want %s?%s", reqs[0].Path, reqs[0].RawQuery, tc.wantPath, tc.wantQuery.Encode())
			}
		})
	}
}

// TestPluginLogsNamespaceFromContext: without -n, the kubeconfig context's
// namespace, as kubectl.
func TestPluginLogsNamespaceFromContext(t *testing.T) {
	f := newFakeAPIServer(t, deferPod("jobs"))
	f.nodeBody = "bye\n"
	if code, _, errOut := runPlugin(t, "logs", "web", "-c", "cleanup", "--kubeconfig", f.kubeconfig(t, "jobs")); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if reqs := f.nodeRequests(); len(reqs) != 1 || !strings.Contains(reqs[0].Path, "/containerLogs/jobs/web/") {
		t.Errorf("node proxy requests %v, want the context's namespace", reqs)
	}
}

// TestPluginLogsDefaultContainer: without -c, the first regular container,
// said on stderr as kubectl logs says it (podcmd.FindOrDefaultContainerByName
// in kubectl's pkg/cmd/util/podcmd), the defer containers listed too; the
// kubectl.kubernetes.io/default-container annotation may name a defer
// container.
func TestPluginLogsDefaultContainer(t *testing.T) {
	f := newFakeAPIServer(t, deferPod("default"))
	cfg := f.kubeconfig(t, "")
	code, _, errOut := runPlugin(t, "logs", "web", "--kubeconfig", cfg)
	if want := "Defaulted container \"app\" out of: app, side, init (init), cleanup (defer)\n"; code != 0 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 0, %q", code, errOut, want)
	}
	f.pods["default/web"].Annotations[defaultContainerAnnotation] = "cleanup"
	if code, _, errOut := runPlugin(t, "logs", "web", "--kubeconfig", cfg); code != 0 || errOut != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	reqs := f.nodeRequests()
	if len(reqs) != 2 || !strings.HasSuffix(reqs[0].Path, "/web/app") || !strings.HasSuffix(reqs[1].Path, "/web/cleanup") {
		t.Errorf("node proxy requests %v, want app, then cleanup", reqs)
	}
}

// TestPluginMessages: refusals read as kubectl's (exit code 1): its own
// checks (kubectl's pkg/cmd/logs/logs.go Complete and Validate), the API
// server's (a Status), and the node's, passed on by the proxy as text,
// which the API server's pods/log turns into a status error by its code
// (k8s.io/apiserver pkg/registry/generic/rest/response_checker.go).
func TestPluginMessages(t *testing.T) {
	unscheduled := deferPod("default")
	unscheduled.Name, unscheduled.Spec.NodeName = "pending", ""
	for name, tc := range map[string]struct {
		args []string
		// The node's answer.
		nodeStatus      int
		nodeBody        string
		nodeContentType string
		wantErr         string
		wantCode        int
		// wantRequest: the node was asked.
		wantRequest bool
	}{
		"unknown container": {
			args:    []string{"logs", "web", "-c", "nope"},
			wantErr: "error: container nope is not valid for pod web out of: app, side, init (init), cleanup (defer)\n", wantCode: 1,
		},
		"missing pod, logs": {
			args:    []string{"logs", "nope", "-c", "cleanup"},
			wantErr: "error: error from server (NotFound): pods \"nope\" not found in namespace \"default\"\n", wantCode: 1,
		},
		"missing pod, describe": {
			args:    []string{"describe", "nope"},
			wantErr: "Error from server (NotFound): pods \"nope\" not found\n", wantCode: 1,
		},
		"no pod": {
			args:     []string{"logs"},
			wantErr:  "error: expected 'logs [-f] [-p] POD [-c CONTAINER]'.\nPOD is a required argument for the logs command\nSee 'kubectl podward logs -h' for help and examples\n",
			wantCode: 1,
		},
		"describe without a name": {
			args:     []string{"describe"},
			wantErr:  "error: you must specify the name of a pod to describe: kubectl podward describe POD\nSee 'kubectl podward describe -h' for help and examples\n",
			wantCode: 1,
		},
		"two containers": {
			args:    []string{"logs", "web", "cleanup", "-c", "app"},
			wantErr: "error: only one of -c or an inline [CONTAINER] arg is allowed\n", wantCode: 1,
		},
		"since and since-time": {
			args:    []string{"logs", "web", "--since", "1m", "--since-time", "2026-12-01T10:00:00Z"},
			wantErr: "error: at most one of `sinceTime` or `sinceSeconds` may be specified\n", wantCode: 1,
		},
		"tail": {
			args:    []string{"logs", "web", "--tail", "-2"},
			wantErr: "error: --tail must be greater than or equal to -1\n", wantCode: 1,
		},
		"limit-bytes": {
			args:    []string{"logs", "web", "--limit-bytes", "-1"},
			wantErr: "error: --limit-bytes must be greater than 0\n", wantCode: 1,
		},
		"not a pod": {
			args:    []string{"logs", "job/web"},
			wantErr: "error: cannot get the logs from job: kubectl podward reads pods only\n", wantCode: 1,
		},
		"the node refuses": {
			args:       []string{"logs", "web", "-c", "cleanup"},
			nodeStatus: http.StatusBadRequest, nodeBody: `container "cleanup" in pod "web" has no log yet`,
			wantErr: "Error from server (BadRequest): container \"cleanup\" in pod \"web\" has no log yet\n", wantCode: 1, wantRequest: true,
		},
		"the node does not know the pod": {
			args:       []string{"logs", "web", "-c", "cleanup"},
			nodeStatus: http.StatusNotFound, nodeBody: `pod "web" does not exist`,
			wantErr: "Error from server (NotFound): the server could not find the requested resource ( pods web)\n", wantCode: 1, wantRequest: true,
		},
		"no nodes/proxy permission": {
			args:       []string{"logs", "web", "-c", "cleanup"},
			nodeStatus: http.StatusForbidden, nodeContentType: "application/json",
			nodeBody: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
				`"message":"nodes \"n1\" is forbidden: User \"me\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope"}`,
			wantErr:  "Error from server (Forbidden): nodes \"n1\" is forbidden: User \"me\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope\n",
			wantCode: 1, wantRequest: true,
		},
		"not scheduled": {
			// The API server's pods/log streams nothing for a pod with no node.
			args: []string{"logs", "pending", "-c", "cleanup"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPIServer(t, deferPod("default"), unscheduled)
			f.nodeStatus, f.nodeBody, f.nodeContentType = tc.nodeStatus, tc.nodeBody, tc.nodeContentType
			code, out, errOut := runPlugin(t, append(tc.args, "--kubeconfig", f.kubeconfig(t, ""))...)
			if code != tc.wantCode || errOut != tc.wantErr || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d, %q, nothing", code, errOut, out, tc.wantCode, tc.wantErr)
			}
			if got := len(f.nodeRequests()) > 0; got != tc.wantRequest {
				t.Errorf("node asked: %v, want %v", got, tc.wantRequest)
			}
		})
	}
}

// TestPluginConnectionRefused: kubectl's words for an API server that is
// not there.
func TestPluginConnectionRefused(t *testing.T) {
	f := newFakeAPIServer(t)
	addr := f.srv.Listener.Addr().String()
	f.srv.Close()
	code, _, errOut := runPlugin(t, "logs", "web", "--kubeconfig", f.kubeconfig(t, ""))
	if want := "The connection to the server " + addr + " was refused - did you specify the right host or port?\n"; code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

// TestPluginDescribe: kubectl describe pod's rendering with the Defer
// Containers section from the node's statuses annotation, and the pod's
// events asked for as kubectl describe asks for them.
func TestPluginDescribe(t *testing.T) {
	f := newFakeAPIServer(t, deferPod("default"))
	f.events = []v1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", UID: "uid-1"},
		Type:           v1.EventTypeNormal, Reason: "DeferCompleted", Message: "Defer container cleanup completed",
		Source:         v1.EventSource{Component: "podward", Host: "n1"},
		FirstTimestamp: metav1.NewTime(time.Now().Add(-time.Minute)), LastTimestamp: metav1.NewTime(time.Now().Add(-time.Minute)), Count: 1,
	}}
	cfg := f.kubeconfig(t, "")
	for _, args := range [][]string{{"web"}, {"pod", "web"}, {"pod/web"}} {
		code, out, errOut := runPlugin(t, append([]string{"describe", "--kubeconfig", cfg}, args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("describe %v: exit %d, stderr %q", args, code, errOut)
		}
		for _, want := range []string{"Name:         web\n", "Node:         n1/", "Defer Containers:\n  cleanup:\n",
			"    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0\n", "    Restart Count:  1\n",
			"Normal  DeferCompleted  ", "podward  Defer container cleanup completed\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe %v lacks %q:\n%s", args, want, out)
			}
		}
	}
	f.mu.Lock()
	sel := f.selector
	f.mu.Unlock()
	if want := "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=uid-1"; sel != want {
		t.Errorf("events field selector %q, want %q", sel, want)
	}
}
