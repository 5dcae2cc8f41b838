package bench

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deferAnnotation declares a pod's defer containers (docs/lifecycle.md);
// the bench speaks the API, as any client, so it spells it out.
const deferAnnotation = "pod.alpha.kubernetes.io/defer-containers"

// namespace holds the bench's pods.
const namespace = "default"

// stampMount is where a CRI container sees the stamp directory.
const stampMount = "/bench-stamps"

// sleepFor is how long a long-running container runs: longer than any run.
const sleepFor = "86400"

// The containers of a start pod: one sidecar, two regular containers.
var startContainers = []string{"side", "app1", "app2"}

// podEnv is what the pods of a run depend on: the runtime's paths and
// images, the stamp directory, the run's marker.
type podEnv struct {
	cri bool
	// bash and image are the shell that writes the stamps and its image;
	// busybox the image of the plain processes.
	bash, image, busybox string
	// stampDir is the host's stamp directory.
	stampDir string
	// marker is the NAME=VALUE every container gets in its environment,
	// by which the bench finds what a run left.
	markerName, markerValue string
}

func processEnv(stampDir, runID string) podEnv {
	return podEnv{bash: "/bin/bash", image: "bash", busybox: "busybox", stampDir: stampDir, markerName: markerEnv, markerValue: runID}
}

func criEnv(stampDir, runID string) podEnv {
	return podEnv{cri: true, bash: "/usr/local/bin/bash", image: "bash", busybox: "busybox", stampDir: stampDir, markerName: markerEnv, markerValue: runID}
}

// markerEnv names the run's marker variable.
const markerEnv = "PODWARD_BENCH_RUN"

func (e podEnv) marker() string { return e.markerName + "=" + e.markerValue }

// stampPath is where the container writes its stamp, as it sees it.
func (e podEnv) stampPath(file string) string {
	if e.cri {
		return filepath.Join(stampMount, file)
	}
	return filepath.Join(e.stampDir, file)
}

// stampScript is the container's command: write the stamp, print it, and
// sleep until SIGTERM. The shell traps TERM and waits for its sleep rather
// than exec it: in a CRI container it is PID 1 of its own PID namespace,
// which the kernel gives no default action for SIGTERM.
func (e podEnv) stampScript(file string) []string {
	return []string{e.bash, "-c", fmt.Sprintf("trap 'exit 0' TERM; t=$EPOCHREALTIME; echo $t > %s; echo started $t; /bin/sleep %s & wait", e.stampPath(file), sleepFor)}
}

// sleepCommand is a long-running container that ends on SIGTERM: a plain
// sleep on the process runtime, a shell that traps TERM around it in a
// CRI container (PID 1, see stampScript).
func (e podEnv) sleepCommand() []string {
	if e.cri {
		return []string{"/bin/sh", "-c", "trap 'exit 0' TERM; /bin/sleep " + sleepFor + " & wait"}
	}
	return []string{"/bin/sleep", sleepFor}
}

func stampFile(pod, container string) string { return pod + "." + container }

// stampFiles are the stamp files of a start pod named pod.
func stampFiles(pod string) []string {
	out := make([]string, len(startContainers))
	for i, c := range startContainers {
		out[i] = stampFile(pod, c)
	}
	return out
}

func (e podEnv) container(name, image string, command []string) v1.Container {
	c := v1.Container{
		Name:    name,
		Image:   image,
		Command: command,
		Env:     []v1.EnvVar{{Name: e.markerName, Value: e.markerValue}},
	}
	if e.cri {
		// Never a pull per start: the images are pulled once, by the
		// warm-up.
		c.ImagePullPolicy = v1.PullIfNotPresent
		c.VolumeMounts = []v1.VolumeMount{{Name: "stamps", MountPath: stampMount}}
	}
	return c
}

func (e podEnv) pod(name string, grace int64) *v1.Pod {
	p := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
		},
	}
	if e.cri {
		dir := v1.HostPathDirectory
		p.Spec.Volumes = []v1.Volume{{Name: "stamps", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: e.stampDir, Type: &dir}}}}
	}
	return p
}

// startPod is the pod of the start and stop scenarios: a sidecar and two
// regular containers, each writing its stamp first.
func (e podEnv) startPod(name string, grace int64) *v1.Pod {
	p := e.pod(name, grace)
	always := v1.ContainerRestartPolicyAlways
	side := e.container(startContainers[0], e.image, e.stampScript(stampFile(name, startContainers[0])))
	side.RestartPolicy = &always
	p.Spec.InitContainers = []v1.Container{side}
	for _, c := range startContainers[1:] {
		p.Spec.Containers = append(p.Spec.Containers, e.container(c, e.image, e.stampScript(stampFile(name, c))))
	}
	return p
}

// deferWork is how long each of the two defer containers of deferPod runs.
const deferWork = "0.05"

// deferPod is startPod with two defer containers of 50 ms each and a 60 s
// grace period.
func (e podEnv) deferPod(name string) (*v1.Pod, error) {
	p := e.startPod(name, 60)
	var defers []v1.Container
	for _, n := range []string{"flush1", "flush2"} {
		c := e.container(n, e.busybox, []string{"/bin/sleep", deferWork})
		c.VolumeMounts = nil // the defer containers write no stamp
		defers = append(defers, c)
	}
	b, err := json.Marshal(defers)
	if err != nil {
		return nil, err
	}
	p.Annotations = map[string]string{deferAnnotation: string(b)}
	return p, nil
}

// sleepPod is a pod of n regular containers that only sleep, with an exec
// readiness probe every second on each when probe is set.
func (e podEnv) sleepPod(name string, n int, probe bool) *v1.Pod {
	p := e.pod(name, 30)
	for i := range n {
		c := e.container(fmt.Sprintf("c%d", i), e.busybox, e.sleepCommand())
		c.VolumeMounts = nil
		if probe {
			c.ReadinessProbe = &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/bin/true"}}},
				PeriodSeconds: 1,
			}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	p.Spec.Volumes = nil
	return p
}
