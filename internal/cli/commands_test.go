package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// webPod has an init container, a sidecar, a regular container and a defer
// container.
const webPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
  annotations:
    team: podward
    pod.alpha.kubernetes.io/defer-containers: '[{"name":"upload","image":"busybox","command":["/bin/sh","-c","echo uploading"]}]'
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: setup
    image: busybox
    command: ["/bin/sh", "-c", "echo set up"]
  - name: proxy
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "echo proxying; sleep 100 & wait"]
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "echo hi; sleep 100 & wait"]
    env:
    - name: GREETING
      value: hello
`

func TestApplyGetDescribeDelete(t *testing.T) {
	e := newEnv(t)
	file := e.manifest("web.yaml", webPod)
	if r := e.ok("apply", "-f", file); r.out != "pod/web created\n" {
		t.Fatalf("first apply:\n%s", r)
	}
	if r := e.ok("apply", "-f", file); r.out != "pod/web unchanged\n" {
		t.Fatalf("second apply:\n%s", r)
	}
	if r := e.ok("wait", "pod/web", "--for=condition=Ready", "--timeout", "60s"); r.out != "pod/web condition met\n" {
		t.Fatalf("wait:\n%s", r)
	}

	r := e.ok("get", "pods")
	if !regexp.MustCompile(`^NAME +READY +STATUS +RESTARTS +AGE\nweb +2/2 +Running +0 +\d+s\n$`).MatchString(r.out) {
		t.Fatalf("get pods:\n%s", r)
	}
	r = e.ok("get", "pods", "-o", "wide")
	if !regexp.MustCompile(`^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES\nweb +2/2 +Running +0 +\d+s +127\.0\.0\.1 +localhost +<none> +<none>\n$`).MatchString(r.out) {
		t.Fatalf("get pods -o wide:\n%s", r)
	}
	r = e.ok("get", "pods", "-A")
	if !regexp.MustCompile(`^NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE\ndefault +web +2/2 +Running`).MatchString(r.out) {
		t.Fatalf("get pods -A:\n%s", r)
	}
	if r = e.ok("get", "pod/web", "-o", "name"); r.out != "pod/web\n" {
		t.Fatalf("-o name:\n%s", r)
	}

	var pod v1.Pod
	r = e.ok("get", "pod", "web", "-o", "json")
	if err := json.Unmarshal([]byte(r.out), &pod); err != nil || pod.Kind != "Pod" || pod.Name != "web" || pod.Status.Phase != v1.PodRunning {
		t.Fatalf("-o json: %v\n%s", err, r)
	}
	if !strings.HasPrefix(r.out, "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Pod\",") {
		t.Fatalf("-o json is not kubectl's layout:\n%s", r.out[:min(len(r.out), 200)])
	}
	// kubectl's template formats: one object by name, a List otherwise.
	if r = e.ok("get", "pod", "web", "-o", "jsonpath={.kind}/{.metadata.name} {.status.phase}"); r.out != "Pod/web Running" {
		t.Fatalf("-o jsonpath: %q", r.out)
	}
	if r = e.ok("get", "pods", "-o", "jsonpath", "--template", "{.kind}: {.items[*].metadata.name}"); r.out != "List: web" {
		t.Fatalf("-o jsonpath --template: %q", r.out)
	}
	if r = e.ok("get", "pods", "-o", "go-template={{range .items}}{{.metadata.labels.app}}{{end}}"); r.out != "web" {
		t.Fatalf("-o go-template: %q", r.out)
	}
	if r = e.run("get", "pods", "-o", "jsonpath={.items[0].nothing}", "--allow-missing-template-keys=false"); r.code != 1 || !strings.Contains(r.err, "nothing is not found") {
		t.Fatalf("a missing key with --allow-missing-template-keys=false: %+v", r)
	}
	r = e.ok("get", "pods", "-o", "yaml")
	var list struct {
		Kind  string   `json:"kind"`
		Items []v1.Pod `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(r.out), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Kind != "Pod" {
		t.Fatalf("-o yaml: %v\n%s", err, r)
	}

	r = e.ok("describe", "pod", "web")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Name: +web$`),
		regexp.MustCompile(`(?m)^Node: +localhost/127\.0\.0\.1$`),
		regexp.MustCompile(`(?m)^Labels: +app=web$`),
		regexp.MustCompile(`(?m)^Annotations: +team: podward$`),
		regexp.MustCompile(`(?m)^Status: +Running$`),
		regexp.MustCompile(`(?m)^Init Containers:\n  setup:\n    Container ID: +podward://`),
		regexp.MustCompile(`(?m)^    State: +Terminated\n      Reason: +Completed\n      Exit Code: +0$`),
		regexp.MustCompile(`(?m)^Containers:\n  app:\n`),
		regexp.MustCompile(`(?m)^      GREETING: +hello$`),
		regexp.MustCompile(`(?m)^Defer Containers:\n  upload:\n    Container ID: *\n    Image: +busybox\n`),
		regexp.MustCompile(`(?m)^      Reason: +WaitingForTermination$`),
		regexp.MustCompile(`(?m)^Conditions:\n  Type +Status\n`),
		regexp.MustCompile(`(?m)^  Ready +True $`),
		regexp.MustCompile(`(?m)^Volumes: +<none>$`),
		regexp.MustCompile(`(?m)^Events:\n  Type +Reason +Age +From +Message\n  ---- +------ +---- +---- +-------\n  Normal +Scheduled +\d+s +podward +Successfully assigned default/web to localhost$`),
		regexp.MustCompile(`(?m)^  Normal +Started +\d+s +podward +Started container app$`),
	} {
		if !want.MatchString(r.out) {
			t.Errorf("describe lacks %s:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "defer-container") {
		t.Errorf("describe shows the defer annotations:\n%s", r.out)
	}

	r = e.ok("events", "--for", "pod/web")
	if !regexp.MustCompile(`^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\n\d+s +Normal +Scheduled +Pod/web +Successfully assigned default/web to localhost\n`).MatchString(r.out) {
		t.Fatalf("events:\n%s", r)
	}
	// Every row of a listed table has its MESSAGE in the header's column.
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	col := strings.Index(lines[0], "MESSAGE")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Fatalf("events table is not aligned at column %d:\n%s", col, r.out)
		}
	}
	var events v1.EventList
	if err := json.Unmarshal([]byte(e.ok("events", "-o", "json").out), &events); err != nil || events.Kind != "EventList" || len(events.Items) < 5 {
		t.Fatalf("events -o json: %v %+v", err, events.TypeMeta)
	}
	if r := e.ok("events", "--for", "pod/web", "-o", "jsonpath={.kind} {.items[0].reason}"); r.out != "EventList Scheduled" {
		t.Fatalf("events -o jsonpath: %q", r.out)
	}

	// Ready says the container runs, not that it has written its line yet:
	// follow the log until it has.
	f := e.start("logs", "-f", "web")
	f.out.waitFor(t, "hi\n")
	f.stop(t)
	if r = e.ok("logs", "web"); r.out != "hi\n" {
		t.Fatalf("logs:\n%s", r)
	}
	if r = e.ok("logs", "pod/web", "-c", "setup"); r.out != "set up\n" {
		t.Fatalf("logs of the init container:\n%s", r)
	}

	// A changed spec: the pod is replaced.
	changed := strings.Replace(webPod, "echo hi;", "echo hello;", 1)
	if r := e.ok("apply", "-f", e.manifest("web2.yaml", changed)); r.out != "pod/web configured\n" {
		t.Fatalf("changed apply:\n%s", r)
	}
	if r := e.ok("wait", "pod/web", "--for=jsonpath={.spec.containers[0].command[2]}=echo hello; sleep 100 & wait"); r.out != "pod/web condition met\n" {
		t.Fatalf("wait for the replacement:\n%s", r)
	}
	e.ok("wait", "pod/web", "--for=condition=Ready")
	// The defer container ran when the first pod ended.
	if r := e.ok("events", "--for", "pod/web"); !strings.Contains(r.out, "DeferCompleted") {
		t.Fatalf("no DeferCompleted event:\n%s", r)
	}

	if r = e.ok("delete", "pod", "web"); r.out != "pod \"web\" deleted\n" {
		t.Fatalf("delete:\n%s", r)
	}
	// --wait (the default) returned once the pod was gone.
	r = e.run("get", "pod", "web")
	if r.code != 1 || r.err != "Error from server (NotFound): pods \"web\" not found\n" {
		t.Fatalf("get after delete:\n%s", r)
	}
	if r := e.ok("get", "pods"); r.out != "" || r.err != "No resources found in default namespace.\n" {
		t.Fatalf("get of no pods:\n%s", r)
	}
}

func TestNamespaces(t *testing.T) {
	e := newEnv(t)
	file := e.manifest("web.yaml", strings.Replace(webPod, "name: web\n", "name: web\n  namespace: team\n", 1))
	if r := e.ok("apply", "-f", file); r.out != "pod/web created\n" {
		t.Fatalf("apply:\n%s", r)
	}
	if r := e.ok("get", "pods"); r.err != "No resources found in default namespace.\n" {
		t.Fatalf("get in default:\n%s", r)
	}
	if r := e.ok("get", "pods", "-n", "team"); !strings.Contains(r.out, "web ") {
		t.Fatalf("get -n team:\n%s", r)
	}
	r := e.run("apply", "-f", file, "-n", "other")
	if r.code != 1 || !strings.Contains(r.err, `the namespace from the provided object "team" does not match the namespace "other"`) {
		t.Fatalf("apply -n other:\n%s", r)
	}
	// Without a namespace in the manifest, -n decides.
	plain := e.manifest("plain.yaml", strings.Replace(webPod, "name: web", "name: plain", 1))
	e.ok("apply", "-f", plain, "-n", "team")
	if r := e.ok("get", "pods", "-n", "team", "-o", "name"); r.out != "pod/plain\npod/web\n" {
		t.Fatalf("pods of team:\n%s", r)
	}
	e.ok("delete", "pod", "plain", "web", "-n", "team", "--grace-period", "0")
}

func TestGetWatch(t *testing.T) {
	e := newEnv(t)
	w := e.start("get", "pods", "-w")
	w.err.waitFor(t, "No resources found in default namespace.")
	e.ok("apply", "-f", e.manifest("web.yaml", webPod))
	w.out.waitFor(t, "Running")
	e.ok("delete", "pod", "web", "--grace-period", "0")
	w.out.waitFor(t, "Terminating")
	r := w.stop(t)
	if r.code != 0 || strings.Count(r.out, "NAME") != 1 || !strings.HasPrefix(r.out, "NAME ") {
		t.Fatalf("get -w:\n%s", r)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n")[1:] {
		if !strings.HasPrefix(line, "web ") {
			t.Fatalf("row of another pod: %q", line)
		}
	}
}

func TestEventsWatch(t *testing.T) {
	e := newEnv(t)
	w := e.start("events", "-w")
	w.err.waitFor(t, "No events found in default namespace.")
	e.ok("apply", "-f", e.manifest("web.yaml", webPod))
	w.out.waitFor(t, "Started container app")
	r := w.stop(t)
	if r.code != 0 || !strings.HasPrefix(r.out, "LAST SEEN") || strings.Count(r.out, "LAST SEEN") != 1 || strings.Count(r.out, "Scheduled") != 1 {
		t.Fatalf("events -w:\n%s", r)
	}

	j := e.start("events", "-w", "-o", "json")
	j.out.waitFor(t, `"reason": "Scheduled"`)
	j.stop(t)
}

func TestLogsFollow(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e.ok("apply", "-f", e.manifest("job.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name":"upload","image":"busybox","command":["/bin/sh","-c","echo uploading"]}]'
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["/bin/sh", "-c", "echo waiting; read line < `+fifo+`; echo got $line"]
`))
	e.ok("wait", "pod/job", "--for=jsonpath={.status.containerStatuses[0].state.running}")
	f := e.start("logs", "-f", "job", "-c", "main", "--timestamps")
	f.out.waitFor(t, "waiting")
	// Let the container finish: logs -f prints its last line and ends.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := f.wait(t)
	if r.code != 0 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z waiting\n\S+Z got go\n$`).MatchString(r.out) {
		t.Fatalf("logs -f --timestamps:\n%s", r)
	}
	if r := e.ok("wait", "pod/job", "--for=jsonpath={.status.phase}=Succeeded"); r.out != "pod/job condition met\n" {
		t.Fatalf("wait for Succeeded:\n%s", r)
	}
	if r := e.ok("get", "pods"); !regexp.MustCompile(`\njob +0/1 +Completed +0 `).MatchString(r.out) {
		t.Fatalf("a completed pod:\n%s", r)
	}
	// Once the instance ended, -f prints what there is and returns.
	if r := e.ok("logs", "job", "-f", "--tail", "1", "-c", "main"); r.out != "got go\n" {
		t.Fatalf("logs -f of a finished container:\n%s", r)
	}
	// --limit-bytes, as kubectl's: the log cut after N bytes.
	if r := e.ok("logs", "job", "--limit-bytes", "10", "-c", "main"); r.out != "waiting\ngo" {
		t.Fatalf("logs --limit-bytes 10:\n%s", r)
	}
	if r := e.run("logs", "job", "--limit-bytes", "-1", "-c", "main"); r.code != int(ExitBadInput) || !strings.Contains(r.err, "--limit-bytes must be greater than 0") {
		t.Fatalf("logs --limit-bytes -1:\n%s", r)
	}
	// The defer container ran once the job completed: its log is there.
	job, err := e.agent.GetPod("default", "job")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.agent.WaitTerminated(ctx, job.UID); err != nil {
		t.Fatal(err)
	}
	if r := e.ok("logs", "job", "-c", "upload"); r.out != "uploading\n" {
		t.Fatalf("logs of the defer container:\n%s", r)
	}
}

func TestCrashLoopAndPreviousLogs(t *testing.T) {
	e := newEnv(t)
	counter := filepath.Join(e.dir, "attempts")
	e.ok("apply", "-f", e.manifest("crash.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: crash
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "n=$(cat `+counter+` 2>/dev/null || echo 0); echo attempt-$n; echo $((n+1)) > `+counter+`; exit 3"]
`))
	e.ok("wait", "pod/crash", `--for=jsonpath={.status.containerStatuses[?(@.name=="app")].state.waiting.reason}=CrashLoopBackOff`)
	r := e.ok("get", "pods")
	if !regexp.MustCompile(`\ncrash +0/1 +CrashLoopBackOff +1 \(\d+s ago\) +\d+s\n$`).MatchString(r.out) {
		t.Fatalf("get of a crash-looping pod:\n%s", r)
	}
	if r := e.ok("logs", "crash"); r.out != "attempt-1\n" {
		t.Fatalf("logs:\n%s", r)
	}
	if r := e.ok("logs", "crash", "--previous"); r.out != "attempt-0\n" {
		t.Fatalf("logs --previous:\n%s", r)
	}
	r = e.ok("describe", "pod", "crash")
	if !regexp.MustCompile(`(?m)^    State: +Waiting\n      Reason: +CrashLoopBackOff\n    Last State: +Terminated\n      Reason: +Error\n      Exit Code: +3\n`).MatchString(r.out) ||
		!regexp.MustCompile(`(?m)^    Restart Count: +1$`).MatchString(r.out) {
		t.Fatalf("describe of a crash-looping pod:\n%s", r)
	}
}

func TestWait(t *testing.T) {
	e := newEnv(t)
	e.ok("apply", "-f", e.manifest("slow.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: slow
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: busybox
    command: ["/bin/sh", "-c", "sleep 100 & wait"]
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "sleep 100 & wait"]
`))
	r := e.run("wait", "pod/slow", "--for=condition=Ready", "--timeout", "300ms")
	if r.code != 1 || r.out != "" || r.err != "error: timed out waiting for the condition on pods/slow\n" {
		t.Fatalf("wait that times out:\n%s", r)
	}
	if r := e.ok("wait", "pod/slow", "--for=condition=Ready=false", "--timeout", "0"); r.out != "pod/slow condition met\n" {
		t.Fatalf("wait for Ready=false:\n%s", r)
	}
	if r := e.ok("get", "pods"); !regexp.MustCompile(`\nslow +0/1 +Init:0/1 +0 `).MatchString(r.out) {
		t.Fatalf("status of a pod in its init container:\n%s", r)
	}

	gone := e.start("wait", "pod/slow", "--for=delete")
	if r := e.ok("delete", "pod", "slow", "--wait=false"); r.out != "pod \"slow\" deleted\n" {
		t.Fatalf("delete --wait=false:\n%s", r)
	}
	if r := gone.wait(t); r.code != 0 || r.out != "pod/slow condition met\n" {
		t.Fatalf("wait --for=delete:\n%s", r)
	}
	if r := e.ok("wait", "pod/slow", "--for=delete"); r.out != "pod/slow condition met\n" {
		t.Fatalf("wait --for=delete of a pod that is gone:\n%s", r)
	}
	r = e.run("wait", "pod/slow", "--for=condition=Ready")
	if r.code != 1 || r.err != "Error from server (NotFound): pods \"slow\" not found\n" {
		t.Fatalf("wait for a pod that does not exist:\n%s", r)
	}
	r = e.run("wait", "pod/slow", "--for=ready")
	if r.code != 2 || !strings.Contains(r.err, `unrecognized condition: "ready"`) {
		t.Fatalf("bad --for:\n%s", r)
	}
}

func TestLogsErrors(t *testing.T) {
	e := newEnv(t)
	e.ok("apply", "-f", e.manifest("web.yaml", strings.Replace(webPod, "  containers:\n", "  containers:\n  - name: second\n    image: busybox\n    command: [\"/bin/sh\", \"-c\", \"sleep 100 & wait\"]\n", 1)))
	r := e.run("logs", "web")
	want := "error: a container name must be specified for pod web, choose one of: [second app] or one of the init containers: [setup proxy] or one of the defer containers: [upload]\n"
	if r.code != 1 || r.err != want {
		t.Fatalf("logs without -c:\n%s\nwant %q", r, want)
	}
	r = e.run("logs", "web", "-c", "upload")
	if r.code != 1 || r.err != "Error from server (BadRequest): container \"upload\" in pod \"web\" is waiting to start: WaitingForTermination\n" {
		t.Fatalf("logs of a defer container that did not run:\n%s", r)
	}
	r = e.run("logs", "web", "-c", "nope")
	if r.code != 1 || r.err != "Error from server (BadRequest): container nope is not valid for pod web\n" {
		t.Fatalf("logs of an unknown container:\n%s", r)
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	notFound := "Error from server (NotFound): pods \"nope\" not found\n"
	for _, args := range [][]string{
		{"get", "pod", "nope"},
		{"describe", "pod", "nope"},
		{"logs", "nope"},
		{"delete", "pod", "nope"},
	} {
		if r := e.run(args...); r.code != 1 || r.err != notFound || r.out != "" {
			t.Errorf("podward %s:\n%s", strings.Join(args, " "), r)
		}
	}
	if r := e.run("delete", "pod", "nope", "--ignore-not-found"); r.code != 0 || r.err != "" {
		t.Errorf("delete --ignore-not-found:\n%s", r)
	}

	r := e.run("apply", "-f", e.manifest("typo.yaml", strings.Replace(webPod, "    image: busybox\n    command: [\"/bin/sh\", \"-c\", \"echo hi", "    imagee: busybox\n    command: [\"/bin/sh\", \"-c\", \"echo hi", 1)))
	if r.code != 2 || !strings.Contains(r.err, "spec.containers[0].imagee: unknown field") {
		t.Errorf("apply of a manifest with a typo:\n%s", r)
	}
	r = e.run("apply", "-f", e.manifest("invalid.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: app
    command: ["true"]
  - name: app
    image: busybox
    command: ["true"]
`))
	want := "The Pod \"bad\" is invalid:\n* spec.containers[0].image: Required value\n* spec.containers[1].name: Duplicate value: \"app\"\n"
	if r.code != 2 || r.err != want || r.out != "" {
		t.Errorf("apply of an invalid pod:\n%s\nwant stderr %q", r, want)
	}
	r = e.run("apply", "-f", e.manifest("nocommand.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: nocmd
spec:
  containers:
  - name: app
    image: busybox
`))
	if r.code != 2 || !strings.HasPrefix(r.err, "The Pod \"nocmd\" is invalid: ") {
		t.Errorf("apply of a pod the runtime cannot run:\n%s", r)
	}
	if r := e.run("get", "deployments"); r.code != 2 || !strings.Contains(r.err, `the server doesn't have a resource type "deployments"`) {
		t.Errorf("get deployments:\n%s", r)
	}
	if r := e.run("get", "pods", "-o", "table"); r.code != 2 || !strings.Contains(r.err, `unable to match a printer suitable for the output format "table"`) {
		t.Errorf("get -o table:\n%s", r)
	}
	if r := e.run("delete", "pods"); r.code != 2 || !strings.Contains(r.err, "no name was specified") {
		t.Errorf("delete without a name:\n%s", r)
	}
}

func TestNoAgent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent", "podward.sock")
	stale := filepath.Join(shortDir(t), "stale.sock")
	if err := makeStaleSocket(stale); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte(webPod), 0o644); err != nil {
		t.Fatal(err)
	}
	for socket, what := range map[string]string{
		missing: "failed: the socket does not exist",
		stale:   "was refused",
	} {
		for _, args := range [][]string{
			{"get", "pods"},
			{"get", "pods", "web"},
			{"get", "pods", "-w"},
			{"apply", "-f", file},
			{"describe", "pod", "web"},
			{"logs", "web"},
			{"delete", "pod", "web"},
			{"events", "-w"},
			{"wait", "pod/web", "--for=delete"},
		} {
			out, errb := newBuffer(), newBuffer()
			code := execute(context.Background(), Streams{In: strings.NewReader(""), Out: out, Err: errb}, append([]string{"--socket", socket}, args...)...)
			want := "The connection to the podward agent at " + socket + " " + what + " - did you specify the right socket? Start one with 'podward serve --socket " + socket + "'\n"
			if code != 1 || errb.String() != want || out.String() != "" {
				t.Errorf("podward %s with no agent: exit code %d\nstderr %q\nwant   %q", strings.Join(args, " "), code, errb.String(), want)
			}
		}
	}
	t.Setenv("PODWARD_SOCKET", missing)
	out, errb := newBuffer(), newBuffer()
	code := execute(context.Background(), Streams{In: strings.NewReader(""), Out: out, Err: errb}, "get", "pods")
	if want := "The connection to the podward agent at " + missing + " failed: the socket does not exist - did you specify the right socket? Start one with 'podward serve'\n"; code != 1 || errb.String() != want {
		t.Errorf("with $PODWARD_SOCKET: %d %q, want %q", code, errb.String(), want)
	}
}

func TestServe(t *testing.T) {
	dir := shortDir(t)
	socket := filepath.Join(dir, "run", "podward.sock")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	out, errb := newBuffer(), newBuffer()
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, Streams{In: strings.NewReader(""), Out: out, Err: errb},
			"serve", "--socket", socket, "--root", filepath.Join(dir, "state"), "--backoff-base", "1s")
	}()
	errb.waitFor(t, "podward: agent serving on "+socket)

	run := func(args ...string) result {
		o, eb := newBuffer(), newBuffer()
		code := execute(context.Background(), Streams{In: strings.NewReader(""), Out: o, Err: eb}, append([]string{"--socket", socket}, args...)...)
		return result{out: o.String(), err: eb.String(), code: code}
	}
	if r := run("get", "pods"); r.code != 0 || r.err != "No resources found in default namespace.\n" {
		t.Fatalf("get pods from serve:\n%s", r)
	}
	fi, err := os.Stat(socket)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	// A second agent on the same socket refuses to start.
	if r := run("serve", "--root", filepath.Join(dir, "other")); r.code != 1 || !strings.Contains(r.err, "socket in use") {
		t.Fatalf("second serve:\n%s", r)
	}

	stop()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "podward: agent stopped; the containers keep running") {
			t.Fatalf("serve ended with %d:\n%s", code, errb.String())
		}
	case <-time.After(waitLimit):
		t.Fatal("serve did not stop")
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// stubbornPod's container ignores SIGTERM, so that a deleted pod stays
// Terminating for its grace period and the 2 s after the signal.
const stubbornPod = `apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "trap '' TERM; sleep 100 & wait; sleep 100 & wait"]
`

// TestDeleteGracePeriodRules follows kubectl's (pkg/cmd/delete/delete.go,
// Complete and Validate): --grace-period 0 without --force is 1 s; --force
// means 0, warns, prints "force deleted" and the pod leaves the API at once;
// --force with a grace period above 0, or --now with --grace-period, is
// refused.
func TestDeleteGracePeriodRules(t *testing.T) {
	e := newEnv(t)
	file := e.manifest("stubborn.yaml", stubbornPod)
	e.ok("apply", "-f", file)
	e.ok("wait", "pod/stubborn", "--for=condition=Ready", "--timeout", "60s")

	for _, args := range [][]string{
		{"--force", "--grace-period", "3"},
		{"--now", "--grace-period", "3"},
	} {
		r := e.run(append([]string{"delete", "pod", "stubborn"}, args...)...)
		if r.code != 2 || !strings.Contains(r.err, "cannot be specified together") {
			t.Errorf("delete %q:\n%s", args, r)
		}
	}

	r := e.ok("delete", "pod", "stubborn", "--grace-period", "0", "--wait=false")
	if r.out != "pod \"stubborn\" deleted\n" || r.err != "" {
		t.Fatalf("delete --grace-period 0:\n%s", r)
	}
	var pod v1.Pod
	if err := json.Unmarshal([]byte(e.ok("get", "pod", "stubborn", "-o", "json").out), &pod); err != nil {
		t.Fatal(err)
	}
	if g := pod.DeletionGracePeriodSeconds; g == nil || *g != 1 {
		t.Fatalf("--grace-period 0 without --force: deletionGracePeriodSeconds %v, want 1", g)
	}

	r = e.ok("delete", "pod", "stubborn", "--force")
	if r.out != "pod \"stubborn\" force deleted\n" || r.err != "Warning: "+forceWarning+"\n" {
		t.Fatalf("delete --force:\n%s", r)
	}
	if r := e.run("get", "pod", "stubborn"); r.code != 1 || !strings.Contains(r.err, "NotFound") {
		t.Fatalf("a force-deleted pod is still served:\n%s", r)
	}
	// Gone from the API, its worker still stops its containers: wait for
	// that, since the clean-up only sees the pods the API lists, and
	// stopping the agent leaves containers running.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.agent.WaitTerminated(ctx, pod.UID); err != nil {
		t.Fatalf("the force-deleted pod's containers: %v", err)
	}
}
