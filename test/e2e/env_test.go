package e2e

import (
	"fmt"
	goruntime "runtime"
	"testing"
)

const envPod = `
apiVersion: v1
kind: Pod
metadata:
  name: env-sources
  labels: {app: envtest}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo \"env $NAME $NS $APP $CPU_REQ $MEM_REQ $CPU_LIMIT $REF\""]
    resources:
      requests: {cpu: 250m, memory: 1Mi}
    env:
    - name: NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: APP
      valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}
    - name: CPU_REQ
      valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}
    - name: MEM_REQ
      valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Ki}}
    - name: CPU_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.cpu}}
    - name: REF
      value: "$(NAME).$(CPU_REQ)"
`

// TestEnvFromResourcesAndFields: a container's environment has the
// downward API's fields and its resources (divided by their divisor; a
// missing limit is the node's allocatable, here its CPUs), and $(VAR)
// references to them, on both runtimes.
func TestEnvFromResourcesAndFields(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		r := rt.run(t, "-f", rt.manifest(t, t.TempDir(), envPod, nil))
		r.assertCode(t, 0)
		r.mustFind(t, output("app", fmt.Sprintf("env env-sources default envtest 250 1024 %d env-sources.250", goruntime.NumCPU())))
	})
}
