package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ephemeralcontainers subresource, as kubectl debug uses it: a strategic
// merge patch of spec.ephemeralContainers (merged by name) adds a container
// that then runs; a PUT of the whole list too; what the API server refuses
// is a 422 with the field path.
func TestEphemeralContainersSubresource(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/api/v1/namespaces/default/pods", "application/yaml", podYAML); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	e.waitPod("default", "web", running("app"))
	path := "/api/v1/namespaces/default/pods/web/ephemeralcontainers"

	r := e.do("PATCH", path, "application/strategic-merge-patch+json",
		`{"spec":{"ephemeralContainers":[{"name":"debugger-abcde","image":"busybox","targetContainerName":"app"}]}}`)
	if r.code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	if p := decodeAs[v1.Pod](t, r); p.Kind != "Pod" || len(p.Spec.EphemeralContainers) != 1 || p.Spec.EphemeralContainers[0].TargetContainerName != "app" {
		t.Fatalf("patched pod: %+v", p.Spec.EphemeralContainers)
	}
	e.waitPod("default", "web", func(p *v1.Pod) bool {
		return p != nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
	})

	// A second patch merges by name: the first container stays.
	r = e.do("PATCH", path, "application/strategic-merge-patch+json", `{"spec":{"ephemeralContainers":[{"name":"second","image":"busybox"}]}}`)
	if p := decodeAs[v1.Pod](t, r); r.code != http.StatusOK || len(p.Spec.EphemeralContainers) != 2 {
		t.Fatalf("second patch: %d %s", r.code, r.body)
	}

	cur := decodeAs[v1.Pod](t, e.do("GET", path, "", ""))
	cur.Spec.EphemeralContainers = cur.Spec.EphemeralContainers[:1]
	body, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	st := status(t, e.do("PUT", path, "application/json", string(body)), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	if !strings.Contains(st.Message, `existing ephemeral containers \"second\" may not be removed`) && !strings.Contains(st.Message, `existing ephemeral containers "second" may not be removed`) {
		t.Fatalf("a removal: %s", st.Message)
	}
	st = status(t, e.do("PATCH", path, "application/strategic-merge-patch+json",
		`{"spec":{"ephemeralContainers":[{"name":"third","image":"busybox","ports":[{"containerPort":80}]}]}}`), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	if !strings.Contains(st.Message, "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container") {
		t.Fatalf("a port: %s", st.Message)
	}
	status(t, e.do("PATCH", "/api/v1/namespaces/default/pods/nope/ephemeralcontainers", "application/strategic-merge-patch+json", `{}`), http.StatusNotFound, metav1.StatusReasonNotFound)
}
