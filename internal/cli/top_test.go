package cli

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/wire"
)

func usage(cpu, mem string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
}

// topItems are two pods as the agent serves them: CPU in nanocores and
// memory in bytes or Ki, as metrics-server's.
func topItems() []wire.PodMetrics {
	return []wire.PodMetrics{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Containers: []wire.ContainerMetrics{
			{Name: "proxy", Usage: usage("1500000n", "100Mi")},
			{Name: "app", Usage: usage("250000000n", "40000Ki")},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "kube-system"}, Containers: []wire.ContainerMetrics{
			{Name: "db", Usage: usage("12345678n", "300Mi")},
		}},
	}
}

// The golden outputs are kubectl top pod's (k8s.io/kubectl/pkg/metricsutil/
// metrics_printer.go): the pod's usage the sum of its containers', CPU in
// millicores rounded up (Quantity.MilliValue), memory in MiB rounded
// down, every cell followed by a tab in
// kubectl's tab writer (hence the trailing spaces).
func TestPrintPodMetrics(t *testing.T) {
	for name, tc := range map[string]struct {
		o    topPodOptions
		want string
	}{
		"pods by name": {
			want: "" +
				"NAME   CPU(cores)   MEMORY(bytes)   \n" +
				"db     13m          300Mi           \n" +
				"web    252m         139Mi           \n",
		},
		"containers": {
			o: topPodOptions{containers: true},
			want: "" +
				"POD   NAME    CPU(cores)   MEMORY(bytes)   \n" +
				"db    db      13m          300Mi           \n" +
				"web   app     250m         39Mi            \n" +
				"web   proxy   2m           100Mi           \n",
		},
		"all namespaces sorted by cpu without headers": {
			o: topPodOptions{allNamespaces: true, sortBy: "cpu", noHeaders: true},
			want: "" +
				"default       web   252m   139Mi   \n" +
				"kube-system   db    13m    300Mi   \n",
		},
		"containers sorted by memory": {
			o: topPodOptions{containers: true, sortBy: "memory"},
			want: "" +
				"POD   NAME    CPU(cores)   MEMORY(bytes)   \n" +
				"db    db      13m          300Mi           \n" +
				"web   proxy   2m           100Mi           \n" +
				"web   app     250m         39Mi            \n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printPodMetrics(&out, topItems(), tc.o); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

// An agent whose runtime reads no usage (the process runtime without
// cgroups) has no metrics API: kubectl top's message, exit 1.
func TestTopPodWithoutUsage(t *testing.T) {
	e := newEnv(t)
	r := e.run("top", "pod")
	if r.code != 1 || r.err != "error: Metrics API not available\n" {
		t.Errorf("podward top pod:\n%s\nwant exit 1 and kubectl's error", r)
	}
	if r := e.run("top", "pod", "--sort-by=name"); r.code != 2 || !strings.Contains(r.err, "--sort-by accepts only cpu or memory") {
		t.Errorf("podward top pod --sort-by=name:\n%s\nwant exit 2 and kubectl's error", r)
	}
}
