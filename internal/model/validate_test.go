package model

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Messages of apimachinery's name checks, as they appear in the want lines.
const (
	dns1123LabelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	dns1123SubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	labelValueMsg       = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	envNameMsg          = `a valid environment variable name must consist only of printable ASCII characters other than '='`
	deferPath           = `metadata.annotations[pod.alpha.kubernetes.io/defer-containers]`
)

// invalidManifests maps each file of testdata/invalid, without ".yaml", to
// the exact lines Decode (when it fails) or FormatErrors(Validate) reports.
var invalidManifests = map[string][]string{
	"bad-container-name": {
		`spec.containers[0].name: Invalid value: "web.server": must not contain dots`,
	},
	"bad-container-port": {
		`spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		`spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"`,
	},
	"bad-env-name": {
		`spec.containers[0].env[0].name: Invalid value: "LOG_LEVEL=debug": ` + envNameMsg,
		`spec.containers[0].env[1].name: Required value`,
	},
	"bad-json-in-defer": {
		deferPath + `: invalid JSON list of containers: invalid character '}' looking for beginning of object key string`,
	},
	"bad-json-in-legacy-init": {
		`metadata.annotations[pod.beta.kubernetes.io/init-containers]: invalid JSON list of containers: json: cannot unmarshal object into Go value of type []v1.Container`,
	},
	"bad-namespace-and-label": {
		`metadata.namespace: Invalid value: "Team_A": ` + dns1123LabelMsg,
		`metadata.labels: Invalid value: "not a valid value!": ` + labelValueMsg,
	},
	"bad-pod-name": {
		`metadata.name: Invalid value: "My_Pod": ` + dns1123SubdomainMsg,
	},
	// The API server 1.37's validateResizePolicy and validateInitContainers
	// (pkg/apis/core/validation/validation.go).
	"bad-resize-policy": {
		`spec.initContainers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`,
		`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`,
		`spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`,
		`spec.containers[0].resizePolicy[1]: Duplicate value: "memory"`,
		`spec.containers[0].resizePolicy: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory"`,
		`spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"`,
		`spec.containers[0].resizePolicy: Invalid value: "Sometimes": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`,
	},
	"bad-restart-policy": {
		`spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
		`spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`,
	},
	"defer-lifecycle": {
		deferPath + `[0].lifecycle: Forbidden: may not be set for defer containers`,
	},
	"defer-missing-image": {
		deferPath + `[0].image: Required value`,
	},
	"defer-ports": {
		deferPath + `[0].ports: Forbidden: may not be set for defer containers`,
	},
	"defer-probe": {
		deferPath + `[0].livenessProbe: Forbidden: may not be set for defer containers`,
	},
	"defer-restart-always": {
		deferPath + `[0].restartPolicy: Unsupported value: "Always": supported values: "OnFailure": defer containers run to completion and are retried on failure`,
	},
	"duplicate-mount-path": {
		`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/usr/share/nginx/html/": must be unique`,
	},
	"duplicate-name-containers": {
		`spec.containers[1].name: Duplicate value: "app"`,
	},
	"duplicate-name-defer": {
		deferPath + `[1].name: Duplicate value: "app"`,
	},
	"duplicate-name-init-and-container": {
		`spec.containers[0].name: Duplicate value: "setup"`,
	},
	"duplicate-name-legacy-init-and-defer": {
		deferPath + `[0].name: Duplicate value: "prepare"`,
	},
	"duplicate-yaml-key": {
		`yaml: unmarshal errors: line 5: key "name" already set in map`,
	},
	"env-value-and-value-from": {
		"spec.containers[0].env[0].valueFrom: Forbidden: may not be specified when `value` is not empty",
		`spec.containers[0].env[1].valueFrom: Forbidden: may not have more than one field specified at a time`,
	},
	"host-port-conflict": {
		`spec.containers[0].ports[0].hostPort: Duplicate value: "80/TCP"`,
		`spec.containers[0].ports[1].name: Duplicate value: "http"`,
	},
	"init-container-probe": {
		`spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
		`spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always`,
	},
	"init-container-restart-policy": {
		`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
	},
	"legacy-and-init-containers": {
		`metadata.annotations[pod.beta.kubernetes.io/init-containers]: may not be set together with spec.initContainers: move these init containers into spec.initContainers`,
	},
	"lifecycle-tcp-socket": {
		`spec.containers[0].lifecycle.postStart.sleep.seconds: Invalid value: -1: must be greater than or equal to 0`,
		`spec.containers[0].lifecycle.preStop.tcpSocket: Forbidden: not supported as a lifecycle handler: use exec, httpGet or sleep`,
	},
	"missing-containers": {
		`spec.containers: Required value`,
	},
	"missing-image": {
		`spec.containers[0].image: Required value`,
	},
	"missing-kind": {
		`kind is missing: podward runs Pods, ConfigMaps and Secrets (want "kind: Pod")`,
		`apiVersion is missing: a Pod is "apiVersion: v1"`,
	},
	"missing-name": {
		`metadata.name: Required value`,
	},
	"mount-undeclared-volume": {
		`spec.containers[0].volumeMounts[0].name: Not found: "cache"`,
	},
	"multi-document-second-bad": {
		`document 2: spec.containers[0].resource: unknown field`,
		`document 3: kind "Service" is not supported: podward runs Pods, ConfigMaps and Secrets`,
	},
	"multiple-errors": {
		`spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
		`spec.containers[0].name: Duplicate value: "init"`,
		`spec.containers[0].image: Required value`,
		`spec.containers[0].ports[0].containerPort: Required value`,
		`spec.containers[0].env[0].name: Invalid value: "A=B": ` + envNameMsg,
		`spec.containers[0].volumeMounts[0].name: Not found: "missing"`,
		`spec.containers[1].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
		deferPath + `[0].name: Invalid value: "Upload": ` + dns1123LabelMsg,
		deferPath + `[0].ports: Forbidden: may not be set for defer containers`,
		deferPath + `[0].readinessProbe: Forbidden: may not be set for defer containers`,
		`spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0`,
	},
	"negative-run-as-user": {
		`spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive`,
		`spec.containers[0].securityContext.runAsUser: Invalid value: -5: must be between 0 and 2147483647, inclusive`,
	},
	"negative-grace-period": {
		`spec.terminationGracePeriodSeconds: Invalid value: -5: must be greater than or equal to 0`,
	},
	// The API server's checks of spec.resources
	// (pkg/apis/core/validation/validation.go, validatePodResources), the
	// last one with its path.
	"pod-level-resources": {
		`spec.resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1`,
		`spec.resources.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`,
		`spec.resources.requests[memory]: Invalid value: "64Mi": must be greater than or equal to aggregate container requests of 100Mi`,
		`spec.resources.containers[0][memory].limits: Invalid value: "256Mi": must be less than or equal to pod limits of 128Mi`,
	},
	"probe-bad-settings": {
		`spec.containers[0].livenessProbe.httpGet.port: Invalid value: "admin": must be a port number or the name of one of this container's ports`,
		`spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0`,
		`spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`,
		`spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0`,
		`spec.containers[0].readinessProbe.exec.command: Required value`,
		`spec.containers[0].readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 1`,
		`spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes`,
	},
	"probe-two-handlers": {
		`spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`,
	},
	"regular-container-restart-policy": {
		`spec.containers[1].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
	},
	"restart-rules": {
		`spec.initContainers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
		`spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
		`spec.containers[1].restartPolicyRules[0].action: Unsupported value: "Ignore": supported values: "Restart", "RestartAllContainers"`,
		`spec.containers[1].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Equals": supported values: "In", "NotIn"`,
		`spec.containers[1].restartPolicyRules[1].exitCodes: Required value: must be specified`,
		`spec.containers[1].restartPolicyRules[3].action: Unsupported value: "": supported values: "Restart", "RestartAllContainers"`,
		`spec.containers[1].restartPolicyRules[3].exitCodes.operator: Unsupported value: "": supported values: "In", "NotIn"`,
		deferPath + `[0].restartPolicyRules: Forbidden: may not be set for defer containers`,
	},
	"requests-exceed-limits": {
		`spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1`,
		`spec.containers[0].resources.requests[memory]: Invalid value: "-64Mi": must be greater than or equal to 0`,
	},
	"stop-signal-unknown": {
		`spec.containers[0].lifecycle.stopSignal: Invalid value: "SIGSTOPPLEASE": must be a Linux signal name such as SIGTERM, SIGINT, SIGQUIT, SIGUSR1 or SIGRTMIN+1`,
	},
	"stop-signal-windows": {
		`spec.containers[0].lifecycle.stopSignal: Unsupported value: "SIGINT": supported values: "SIGKILL", "SIGTERM"`,
	},
	"sub-path-escapes": {
		`spec.containers[0].volumeMounts[0].subPath: Invalid value: "../../etc": must not contain '..'`,
		`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "relative/path": must be an absolute path`,
	},
	"unknown-field": {
		`spec.containers[0].imagee: unknown field`,
	},
	"unknown-field-in-defer": {
		deferPath + `[0].comand: unknown field`,
	},
	"volumes-bad": {
		`spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type`,
		`spec.volumes[1].name: Duplicate value: "data"`,
		`spec.volumes[2].name: Invalid value: "Logs": ` + dns1123LabelMsg,
		`spec.volumes[2].hostPath.path: Invalid value: "/var/log/../etc": must not contain '..'`,
		`spec.volumes[2].hostPath.type: Unsupported value: "Folder": supported values: "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"`,
	},
	"wrong-kind": {
		`kind "Deployment" is not supported: podward runs Pods, ConfigMaps and Secrets`,
	},
}

// problems decodes a manifest file and returns what is wrong with it, one
// line per problem: the decode error if there is one, else the validation
// errors of every pod.
func problems(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := Decode(data)
	if err != nil {
		return strings.Split(err.Error(), "\n")
	}
	var lines []string
	for _, p := range pods {
		if errs := Validate(p); len(errs) > 0 {
			lines = append(lines, strings.Split(FormatErrors(errs), "\n")...)
		}
	}
	return lines
}

func TestValidateInvalidManifests(t *testing.T) {
	if len(invalidManifests) < 25 {
		t.Fatalf("only %d invalid manifests; keep at least 25", len(invalidManifests))
	}
	for name, want := range invalidManifests {
		t.Run(name, func(t *testing.T) {
			got := problems(t, filepath.Join("testdata", "invalid", name+".yaml"))
			if !slices.Equal(got, want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// Every file in testdata/invalid must have its row, so none is silently
// skipped.
func TestValidateInvalidManifestsAllListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name, ok := strings.CutSuffix(filepath.Base(file), ".yaml")
		if _, listed := invalidManifests[name]; !ok || !listed {
			t.Errorf("%s has no row in invalidManifests", file)
		}
	}
}

func TestValidateValidManifests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no files in testdata/valid")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if got := problems(t, file); len(got) > 0 {
				t.Errorf("problems:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

// The valid manifests are there to cover particular shapes of pod; check
// that they still do.
func TestValidManifestsCoverage(t *testing.T) {
	decodeFile := func(t *testing.T, name string) []*Pod {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", "valid", name))
		if err != nil {
			t.Fatal(err)
		}
		pods, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		return pods
	}
	roles := func(p *Pod) []Role {
		var rs []Role
		for _, ref := range p.Containers() {
			rs = append(rs, ref.Role)
		}
		return rs
	}

	tests := map[string]struct {
		file  string
		check func(t *testing.T, pods []*Pod)
	}{
		"seed: legacy init containers, defer containers and an emptyDir": {
			file: "seed.yaml",
			check: func(t *testing.T, pods []*Pod) {
				p := pods[0]
				want := []Role{RoleInit, RoleInit, RoleMain, RoleDefer, RoleDefer}
				if got := roles(p); !slices.Equal(got, want) {
					t.Errorf("roles = %v, want %v", got, want)
				}
				if _, ok := p.Annotations[LegacyInitContainersAnnotation]; ok {
					t.Error("legacy annotation still present")
				}
				if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].EmptyDir == nil {
					t.Errorf("volumes = %+v, want one emptyDir", p.Spec.Volumes)
				}
			},
		},
		"sidecar: init container with restartPolicy Always": {
			file: "sidecar.yaml",
			check: func(t *testing.T, pods []*Pod) {
				want := []Role{RoleInit, RoleSidecar, RoleMain}
				if got := roles(pods[0]); !slices.Equal(got, want) {
					t.Errorf("roles = %v, want %v", got, want)
				}
			},
		},
		"multi: two pods": {
			file: "multi.yaml",
			check: func(t *testing.T, pods []*Pod) {
				if len(pods) != 2 || pods[0].Name != "one" || pods[1].Name != "two" {
					t.Errorf("got %d pods, want one and two", len(pods))
				}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tt.check(t, decodeFile(t, tt.file))
		})
	}
}

// minimalPod is a valid, defaulted pod for the hand-built cases.
func minimalPod() *Pod {
	p := &Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}},
		},
	}}
	Default(p)
	return p
}

// Cases that Decode cannot produce, because Default fills the field in or
// because the pod is built in Go.
func TestValidateHandBuilt(t *testing.T) {
	tests := map[string]struct {
		mutate func(p *Pod)
		want   []string
	}{
		"valid": {
			mutate: func(*Pod) {},
		},
		"hostnameOverride and hostAliases": {
			mutate: func(p *Pod) {
				p.Spec.HostnameOverride = ptr.To("Not_A_Host")
				p.Spec.HostAliases = []v1.HostAlias{{IP: "10.0.0.300", Hostnames: []string{"ok.example", "Bad_Alias"}}}
			},
			want: []string{
				`spec.hostnameOverride: Invalid value: "Not_A_Host": ` + dns1123SubdomainMsg,
				`spec.hostAliases[0].ip: Invalid value: "10.0.0.300": must be a valid IP address`,
				`spec.hostAliases[0].hostnames[1]: Invalid value: "Bad_Alias": ` + dns1123SubdomainMsg,
			},
		},
		"volume without a source": {
			mutate: func(p *Pod) { p.Spec.Volumes = []v1.Volume{{Name: "data"}} },
			want:   []string{`spec.volumes[0]: Required value: must specify a volume type`},
		},
		"undefaulted container": {
			mutate: func(p *Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "raw", Image: "alpine"})
			},
			want: []string{
				`spec.containers[1].terminationMessagePolicy: Required value`,
				`spec.containers[1].imagePullPolicy: Required value`,
			},
		},
		"undefaulted probe": {
			mutate: func(p *Pod) {
				p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
			},
			want: []string{
				`spec.containers[0].readinessProbe: Required value: must specify a handler type`,
				`spec.containers[0].readinessProbe.periodSeconds: Invalid value: 0: must be greater than or equal to 1`,
				`spec.containers[0].readinessProbe.successThreshold: Invalid value: 0: must be greater than or equal to 1`,
				`spec.containers[0].readinessProbe.failureThreshold: Invalid value: 0: must be greater than or equal to 1`,
			},
		},
		"defer container without restartPolicy is retried on failure": {
			mutate: func(p *Pod) {
				p.Defer = []v1.Container{{Name: "upload", Image: "curl", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile}}
			},
		},
		"defer container with restartPolicy Never": {
			mutate: func(p *Pod) {
				p.Defer = []v1.Container{{Name: "upload", Image: "curl"}}
				Default(p)
				p.Defer[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			},
			want: []string{deferPath + `[0].restartPolicy: Unsupported value: "Never": supported values: "OnFailure": defer containers run to completion and are retried on failure`},
		},
		"generateName without name": {
			mutate: func(p *Pod) { p.Name, p.GenerateName = "", "web-" },
			want:   []string{`metadata.name: Required value: podward does not generate names`},
		},
		"ephemeral containers": {
			mutate: func(p *Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			},
			want: []string{`spec.ephemeralContainers: Forbidden: cannot be set on create`},
		},
		"pod-level resources on windows": {
			mutate: func(p *Pod) {
				p.Spec.OS = &v1.PodOS{Name: v1.Windows}
				p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
			},
			want: []string{`spec.resources: Forbidden: may not be set for a windows pod`},
		},
		"pod-level claims and hugepages alone": {
			mutate: func(p *Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{
					Requests: v1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")},
					Limits:   v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")},
					Claims:   []v1.ResourceClaim{{Name: "gpu"}},
				}
			},
			want: []string{
				`spec.resources.claims: Forbidden: claims may not be set for Resources at pod-level`,
				`spec.resources.requests[hugepages-2Mi]: Invalid value: "4Mi": must be equal to hugepages-2Mi limit of 2Mi`,
				`spec.resources: Forbidden: HugePages require cpu or memory`,
			},
		},
		"extended resource request without limit": {
			mutate: func(p *Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
			},
			want: []string{`spec.containers[0].resources.limits: Forbidden: Limit must be set for non overcommitable resources`},
		},
		"host network port mismatch": {
			mutate: func(p *Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
			},
			want: []string{"spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"},
		},
		"too many restart rules and exit codes": {
			mutate: func(p *Pod) {
				c := &p.Spec.Containers[0]
				c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
				for i := range 21 {
					c.RestartPolicyRules = append(c.RestartPolicyRules, v1.ContainerRestartRule{
						Action: v1.ContainerRestartRuleActionRestart,
						ExitCodes: &v1.ContainerRestartRuleOnExitCodes{
							Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{int32(i + 1)}},
					})
				}
				c.RestartPolicyRules[0].ExitCodes.Values = make([]int32, 256)
			},
			want: []string{
				`spec.containers[0].restartPolicyRules: Too many: 21: must have at most 20 items`,
				`spec.containers[0].restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items`,
			},
		},
		"restart rules at the limits": {
			mutate: func(p *Pod) {
				rule := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{
					Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: make([]int32, 255)}}
				c := &p.Spec.Containers[0]
				c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
				c.RestartPolicyRules = slices.Repeat([]v1.ContainerRestartRule{rule}, 20)
			},
		},
		"dnsPolicy None without dnsConfig": {
			mutate: func(p *Pod) { p.Spec.DNSPolicy = v1.DNSNone },
			want:   []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		},
		"stop signal on a pod without spec.os": {
			mutate: func(p *Pod) {
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := minimalPod()
			tt.mutate(p)
			var got []string
			if errs := Validate(p); len(errs) > 0 {
				got = strings.Split(FormatErrors(errs), "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidateNilPod(t *testing.T) {
	for name, p := range map[string]*Pod{"nil": nil, "no v1.Pod": {}} {
		t.Run(name, func(t *testing.T) {
			if errs := Validate(p); len(errs) != 1 {
				t.Errorf("Validate = %v, want one error", errs)
			}
		})
	}
}

func TestValidateDoesNotChangePod(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "invalid", "multiple-errors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	before := pods[0].DeepCopy()
	beforeDefer := slices.Clone(pods[0].Defer)
	Validate(pods[0])
	if !equality.Semantic.DeepEqual(before, pods[0].Pod) || !equality.Semantic.DeepEqual(beforeDefer, pods[0].Defer) {
		t.Error("Validate changed the pod")
	}
}

func TestFormatErrors(t *testing.T) {
	tests := map[string]struct {
		errs field.ErrorList
		want string
	}{
		"nil":   {},
		"empty": {errs: field.ErrorList{}},
		"two": {
			errs: field.ErrorList{
				field.Duplicate(field.NewPath("spec", "containers").Index(1).Child("name"), "app"),
				field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), ""),
			},
			want: "spec.containers[1].name: Duplicate value: \"app\"\nspec.containers[0].image: Required value",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FormatErrors(tt.errs); got != tt.want {
				t.Errorf("FormatErrors = %q, want %q", got, tt.want)
			}
		})
	}
}
