package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// invalidCases are the manifests of testdata/invalid, by file name without
// ".yaml", with the problems podward must report for each, in order, one
// per line of stderr. Each want is the start of a problem: its field path
// and reason (long explanations are cut).
//
// The containers of these manifests touch __MARKER__ (replaced by a file in
// the test's directory) if they ever run.
var invalidCases = map[string]struct {
	want []string
	// root: the answer differs without root, where every container with
	// volumeMounts is rejected too.
	root bool
}{
	"duplicate-name-init-and-container": {want: []string{
		`spec.containers[0].name: Duplicate value: "app"`,
	}},
	"duplicate-name-containers": {want: []string{
		`spec.containers[1].name: Duplicate value: "app"`,
	}},
	"duplicate-name-defer": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].name: Duplicate value: "app"`,
	}},
	"invalid-container-name": {want: []string{
		`spec.containers[0].name: Invalid value: "Web_Server": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`,
	}},
	"bad-pod-name": {want: []string{
		`metadata.name: Invalid value: "Web.Server_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
	}},
	"missing-image": {want: []string{
		`spec.containers[0].image: Required value`,
	}},
	"no-containers": {want: []string{
		`spec.containers: Required value`,
	}},
	"defer-probe": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].readinessProbe: Forbidden: may not be set for defer containers`,
	}},
	"defer-lifecycle": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].lifecycle: Forbidden: may not be set for defer containers`,
	}},
	"defer-ports": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].ports: Forbidden: may not be set for defer containers`,
	}},
	"defer-restart-always": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].restartPolicy: Unsupported value: "Always": supported values: "OnFailure": defer containers run to completion and are retried on failure`,
	}},
	"negative-grace-period": {want: []string{
		`spec.terminationGracePeriodSeconds: Invalid value: -5: must be greater than or equal to 0`,
	}},
	"mount-undeclared-volume": {want: []string{
		`spec.containers[0].volumeMounts[0].name: Not found: "data"`,
	}},
	"unknown-field": {want: []string{
		`spec.containers[0].imagePolicy: unknown field`,
	}},
	"duplicate-yaml-key": {want: []string{
		`yaml: unmarshal errors: line 9: key "image" already set in map`,
	}},
	"kind-deployment": {want: []string{
		`kind "Deployment" is not supported: podward runs Pods, ConfigMaps and Secrets`,
	}},
	"legacy-and-init-containers": {want: []string{
		`metadata.annotations[pod.beta.kubernetes.io/init-containers]: may not be set together with spec.initContainers`,
	}},
	"defer-invalid-json": {want: []string{
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers]: invalid JSON list of containers: invalid character ']'`,
	}},
	"restart-rule-without-policy": {want: []string{
		`spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
	}},
	"init-probe": {want: []string{
		`spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
	}},
	"bad-port": {want: []string{
		`spec.containers[0].ports[0].containerPort: Invalid value: 80800: must be between 1 and 65535, inclusive`,
	}},
	"bad-env-name": {want: []string{
		`spec.containers[0].env[0].name: Invalid value: "LOG_LEVEL=debug": a valid environment variable name must consist only of printable ASCII characters other than '='`,
	}},
	"no-command": {want: []string{
		`spec.containers[0].command: Required value: the process runtime runs the command itself and has no image to take it from`,
	}},
	"defer-no-command": {want: []string{
		// Only the end: podward names the container
		// "spec.deferContainers[0]", a path that is not in the manifest
		// (validation says metadata.annotations[...defer-containers][0]).
		`[0].command: Required value: the process runtime runs the command itself and has no image to take it from`,
	}},
	"token-volume": {want: []string{
		`spec.volumes[0].projected.sources[0].serviceAccountToken: Unsupported value: podward standalone cannot mint service account tokens`,
	}, root: true},
	"multiple-errors": {want: []string{
		`spec.containers[1].name: Duplicate value: "app"`,
		`spec.containers[1].volumeMounts[0].name: Not found: "data"`,
		`metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].image: Required value`,
		`spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0`,
	}},
	"multi-document-second-bad": {want: []string{
		`document 2: spec.containers[0].resource: unknown field`,
	}},
	"multi-document-second-invalid": {want: []string{
		`pod "bad": spec.containers[0].name: Duplicate value: "app"`,
	}},
	"duplicate-pod-name": {want: []string{
		`document 2: pod "worker": metadata.name: Duplicate value: "worker" (document 1 has it too)`,
	}},
}

// TestInvalidManifest: bad input is exit code 2 with every problem on
// stderr, and nothing starts.
func TestInvalidManifest(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	for name := range invalidCases {
		if !slices.Contains(names, name) {
			t.Errorf("case %q has no testdata/invalid/%s.yaml", name, name)
		}
	}
	for _, name := range names {
		tc, ok := invalidCases[name]
		if !ok {
			t.Errorf("testdata/invalid/%s.yaml has no case", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			if tc.root {
				needRoot(t)
			}
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "invalid", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			marker := filepath.Join(dir, "marker")
			manifest := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(manifest, []byte(strings.ReplaceAll(string(data), "__MARKER__", marker)), 0o644); err != nil {
				t.Fatal(err)
			}

			// The timeout ends the run should a pod start after all.
			r := run(t, "-f", manifest, "--timeout", "3s")
			r.assertCode(t, 2)
			for _, m := range []matcher{contains("Started "), contains("DeferStarted "), re(`^\S+ +\| `)} {
				if i := r.index(m); i >= 0 {
					t.Errorf("a container started: %q; stdout:\n%s", r.lines[i].text, r.stdout)
				}
			}
			if found, _ := filepath.Glob(marker + "*"); len(found) > 0 {
				t.Errorf("a container ran: %v exists", found)
			}

			got := problems(r.stderr, manifest)
			if len(got) != len(tc.want) {
				t.Errorf("%d problems reported, want %d; stderr:\n%s", len(got), len(tc.want), r.stderr)
			}
			for i, want := range tc.want {
				if i >= len(got) {
					t.Errorf("missing problem %q", want)
					continue
				}
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d is %q, want %q", i+1, got[i], want)
				}
			}
		})
	}
}

// problems splits podward's stderr into its lines, one problem each: it
// drops the "error: " prefix and the line "error: FILE:" that starts the
// problems found while reading the file.
func problems(stderr, manifest string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if l == "error: "+manifest+":" {
			continue
		}
		out = append(out, strings.TrimPrefix(l, "error: "))
	}
	return out
}
