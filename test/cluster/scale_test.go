package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/bench"
	"github.com/podward/podward/test/internal/bintest"
)

// The scale test's knobs (make bench-node sets them). Without them it is a
// small run of the same code path, in the suite beside the other tests.
const (
	scalePodsEnv   = "PODWARD_SCALE_PODS"      // pods of the Deployment (default scaleSuitePods)
	scaleRunsEnv   = "PODWARD_SCALE_RUNS"      // runs, each on a new node (default 1)
	scaleSteadyEnv = "PODWARD_SCALE_STEADY"    // a window after all are ready, to measure the agent at rest (default 0: none)
	scaleOutEnv    = "PODWARD_SCALE_OUT"       // a JSON file of every run's figures and their medians
	scaleLogEnv    = "PODWARD_SCALE_NODE_LOG"  // a directory for each run's node log (-v), to see where the time goes
	scaleArgsEnv   = "PODWARD_SCALE_NODE_ARGS" // more flags of the node, space-separated (e.g. --pprof)
)

// scaleSuitePods is the Deployment's size in the suite.
const scaleSuitePods = 20

// scaleImage is the image of the scale test's pods (and of its floor's).
const scaleImage = "busybox"

// kubeletMaxPods is the kubelet's --max-pods default, which a podward
// node's must be too: its Node offers that many pods.
const kubeletMaxPods = 110

type scaleConfig struct {
	pods, runs int
	steady     time.Duration
	out        string
	// alone: a measurement, run on its own (not in parallel with the
	// suite's other tests).
	alone bool
}

func scaleConfigFromEnv(t *testing.T) scaleConfig {
	t.Helper()
	cfg := scaleConfig{pods: scaleSuitePods, runs: 1, out: os.Getenv(scaleOutEnv)}
	atoi := func(env string, into *int) {
		if s := os.Getenv(env); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 {
				t.Fatalf("%s=%q: want a positive integer", env, s)
			}
			*into = v
			cfg.alone = true
		}
	}
	atoi(scalePodsEnv, &cfg.pods)
	atoi(scaleRunsEnv, &cfg.runs)
	if s := os.Getenv(scaleSteadyEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			t.Fatalf("%s=%q: want a duration such as 10s", scaleSteadyEnv, s)
		}
		cfg.steady, cfg.alone = d, true
	}
	if cfg.pods > kubeletMaxPods {
		t.Fatalf("%s=%d: a node runs at most %d pods", scalePodsEnv, cfg.pods, kubeletMaxPods)
	}
	return cfg
}

// readyDeadline bounds the wait for the Deployment's pods (and for their
// deletion): generous, for a loaded 2-core machine.
func (cfg scaleConfig) readyDeadline() time.Duration {
	return 2*time.Minute + time.Duration(cfg.pods)*2*time.Second
}

// TestDeploymentScale: a Deployment of many replicas pinned to one
// `podward node --runtime cri` (the pod network on, as by default) is
// placed there by the real scheduler, and every pod reaches Running and
// Ready with an address of its own; all fit, none rejected (the node
// offers the kubelet's 110 pods). It measures, as the kubelet's density
// test and the pod startup SLO do, each pod's startup latency (seen
// created → all containers started, observed via watch), the time until
// all are ready, and the agent's (and containerd's) CPU and memory
// meanwhile; beside it, before it on the same node, the floor: the same
// pods started at once straight through the CRI (criFloor). In the suite it runs 20 pods once; `make bench-node` runs
// 110 three times alone and writes node-bench.json.
func TestDeploymentScale(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	rt := bintest.CRI()
	rt.Need(t)
	cfg := scaleConfigFromEnv(t)
	if !cfg.alone {
		t.Parallel()
	}
	var results []scaleResult
	for i := range cfg.runs {
		t.Run(fmt.Sprintf("run%d", i+1), func(t *testing.T) {
			results = append(results, scaleRun(t, c, rt, cfg))
		})
	}
	if !t.Failed() {
		reportScale(t, cfg, results)
	}
}

// scaleRun starts a node, runs the Deployment on it until all its pods
// are ready, measures, and deletes it.
func scaleRun(t *testing.T, c *controlPlane, rt bintest.Runtime, cfg scaleConfig) scaleResult {
	name := nodeName(t, "a")
	n := startNode(t, c, name, slices.Concat(rt.Args, strings.Fields(os.Getenv(scaleArgsEnv)))...)
	node := c.waitNode(t, name, "Ready", waitTimeout, func(n *v1.Node) bool {
		s, _ := nodeCondition(n, v1.NodeReady)
		return s == v1.ConditionTrue
	})
	checkPodRoom(t, node)
	ns := testNamespace(t, c)
	rec := recordStarts(t, c.client, ns, cfg.pods)
	d := scaleDeployment(name, cfg.pods)
	// Before the node's cleanup (cleanups run last first): the
	// ReplicaSet would replace the pods that cleanup deletes.
	t.Cleanup(func() {
		_ = c.client.AppsV1().Deployments(ns).Delete(context.Background(), d.Name, metav1.DeleteOptions{})
	})
	res := scaleResult{Pods: cfg.pods, Floor: criFloor(t, cfg.pods, cfg.readyDeadline())}
	procs := startScaleProcs(t, n.cmd.Process.Pid)
	res.LoadAvg = loadAvg()
	t0 := time.Now()
	if _, err := c.client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, rec.allReady, cfg.readyDeadline(), "all pods ready", rec)
	procs.measureRun(t, &res)
	pods := rec.snapshot()
	checkScalePods(t, pods, name, cfg.pods)
	res.fillTimes(pods, t0)
	if cfg.steady > 0 {
		procs.measureSteady(t, &res, cfg.steady)
	}
	del := time.Now()
	if err := c.client.AppsV1().Deployments(ns).Delete(t.Context(), d.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.startDeleting()
	waitClosed(t, rec.gone(), cfg.readyDeadline(), "all pods gone", rec)
	res.DeleteAllS = time.Since(del).Seconds()
	t.Log(res.String())
	if dir := os.Getenv(scaleLogEnv); dir != "" {
		writeNodeLog(t, filepath.Join(dir, name+".log"), n.log.String())
	}
	return res
}

// checkPodRoom checks that the node offers the kubelet's --max-pods
// default: 110 pods, in capacity and allocatable alike.
func checkPodRoom(t *testing.T, n *v1.Node) {
	t.Helper()
	for what, list := range map[string]v1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
		if q, ok := list[v1.ResourcePods]; !ok || q.Value() != kubeletMaxPods {
			t.Errorf("node %s: %s pods %v, want %d (the kubelet's --max-pods default)", n.Name, what, list[v1.ResourcePods], kubeletMaxPods)
		}
	}
}

// scaleDeployment is a Deployment of replicas pods, each of one container
// that sleeps and ends at TERM, pinned to the node by its hostname label
// (the test control plane is shared by parallel tests).
func scaleDeployment(node string, replicas int) *appsv1.Deployment {
	labels := map[string]string{"app": "scale"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					NodeSelector:                  map[string]string{v1.LabelHostname: node},
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Containers: []v1.Container{{
						Name:            "sleep",
						Image:           scaleImage,
						ImagePullPolicy: v1.PullIfNotPresent,
						Command:         []string{"sh", "-c", "trap 'exit 0' TERM; sleep inf & wait"},
					}},
				},
			},
		},
	}
}

// checkScalePods checks that exactly want pods were made (none rejected
// and replaced), all on the node, each with an address of its own.
func checkScalePods(t *testing.T, pods []podTimes, node string, want int) {
	t.Helper()
	if len(pods) != want {
		t.Errorf("%d pods were made for %d replicas: some were rejected or replaced", len(pods), want)
	}
	ips := map[string]string{}
	for _, p := range pods {
		if p.node != node {
			t.Errorf("pod %s on node %q, want %s", p.name, p.node, node)
		}
		if p.ip == "" || p.ip == "127.0.0.1" {
			t.Errorf("pod %s: podIP %q, want one of its own", p.name, p.ip)
		} else if other, dup := ips[p.ip]; dup {
			t.Errorf("pods %s and %s share podIP %s", other, p.name, p.ip)
		}
		ips[p.ip] = p.name
	}
}

// waitClosed waits for ch, or fails with the pods' progress.
func waitClosed(t *testing.T, ch <-chan struct{}, within time.Duration, what string, rec *startRecorder) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("no %s within %v: %s", what, within, rec.progress())
	}
}

// loadAvg is /proc/loadavg's three load averages: the machine is shared.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writeScaleOut writes the runs and their medians as JSON.
func writeScaleOut(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// writeNodeLog keeps a run's node log.
func writeNodeLog(t *testing.T, path, log string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("node log: %s", path)
}

// median is the median of the runs' values of one figure.
func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	return bench.Percentile(s, 50)
}
