package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podward/podward/internal/model"
)

const smallPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["true"]
`

// The CLI refuses a manifest larger than the agent accepts (the Kubernetes
// API server's limit on a request body, 3 MiB) before it decodes it, naming
// the file and the limit: apply and run, from a file or stdin. No agent is
// needed to find out.
func TestManifestTooLarge(t *testing.T) {
	dir := t.TempDir()
	big := smallPod + "#" + strings.Repeat("x", model.MaxManifestBytes) + "\n"
	file := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(file, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = "manifest too large: more than 3 MiB (3145728 bytes), the Kubernetes API server's limit on a request body"
	socket := filepath.Join(dir, "none.sock")
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"apply", "-f", file}, "", "error: " + file + ": " + limit},
		{[]string{"apply", "-f", "-"}, big, "error: stdin: " + limit},
		{[]string{"run", "-f", file}, "", "error: " + file + ": " + limit},
	} {
		out, errb := newBuffer(), newBuffer()
		code := execute(context.Background(), Streams{In: strings.NewReader(tc.stdin), Out: out, Err: errb}, append([]string{"--socket", socket}, tc.args...)...)
		if code != ExitBadInput || strings.TrimSpace(errb.String()) != tc.want {
			t.Errorf("podward %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errb.String(), ExitBadInput, tc.want)
		}
	}
}
