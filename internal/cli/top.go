package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/wire"
)

type topPodOptions struct {
	containers    bool
	allNamespaces bool
	noHeaders     bool
	sortBy        string
}

func newTopCommand(s Streams, api *apiOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Display the pods' resource usage (CPU, memory), as kubectl top does",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTopPodCommand(s, api))
	return cmd
}

func newTopPodCommand(s Streams, api *apiOptions) *cobra.Command {
	var o topPodOptions
	cmd := &cobra.Command{
		Use:     "pod [NAME] [--containers]",
		Aliases: []string{"pods", "po"},
		Short:   "Display the running pods' CPU and memory usage",
		Long: `Top pod prints the CPU (cores, a rate over the last second or more) and memory
(working set: usage minus the inactive file cache, as metrics-server reports it)
of the running pods of the namespace, or of one pod, in kubectl top pod's table:
NAME CPU(cores) MEMORY(bytes), or per container with --containers. The agent
reads them from the runtime (the pods' cgroups on the process runtime, the CRI's
stats on containerd); the first call waits a second for a second CPU sample.`,
		Example: `  podward top pod
  podward top pod web --containers
  podward top pod -A --sort-by=memory`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTopPod(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.containers, "containers", false, "print the usage of each container of the pods")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "the pods of every namespace")
	f.BoolVar(&o.noHeaders, "no-headers", false, "print no header row")
	f.StringVar(&o.sortBy, "sort-by", "", "sort by cpu or memory, highest first")
	return cmd
}

func runTopPod(ctx context.Context, s Streams, api *apiOptions, o topPodOptions, args []string) error {
	if o.sortBy != "" && o.sortBy != "cpu" && o.sortBy != "memory" {
		return usageError(errors.New("--sort-by accepts only cpu or memory"))
	}
	c := api.client()
	defer c.Close()
	ns := api.listNamespace(o.allNamespaces)
	var items []wire.PodMetrics
	if len(args) == 1 {
		name, err := podName(args[0])
		if err != nil {
			return usageError(err)
		}
		m, err := c.GetPodMetrics(ctx, api.namespace, name)
		if err != nil {
			return report(s, metricsAPIError(err))
		}
		items = []wire.PodMetrics{*m}
	} else {
		list, err := c.ListPodMetrics(ctx, ns)
		if err != nil {
			return report(s, metricsAPIError(err))
		}
		items = list.Items
	}
	if len(items) == 0 {
		// As kubectl: pods without metrics yet are an error, no pods a
		// note.
		pods, err := c.ListPods(ctx, ns, client.ListOptions{})
		if err != nil {
			return report(s, err)
		}
		if len(pods.Items) > 0 {
			return report(s, errors.New("metrics not available yet"))
		}
		if o.allNamespaces {
			fmt.Fprintln(s.Err, "No resources found")
		} else {
			fmt.Fprintf(s.Err, "No resources found in %s namespace.\n", ns)
		}
		return nil
	}
	return printPodMetrics(s.Out, items, o)
}

// metricsAPIError is kubectl's error for a metrics API that is not there:
// the agent's runtime reports no usage.
func metricsAPIError(err error) error {
	if apierrors.IsServiceUnavailable(err) {
		return errors.New("Metrics API not available")
	}
	return err
}

// printPodMetrics prints items as kubectl top pod does
// (k8s.io/kubectl/pkg/metricsutil/metrics_printer.go): a pod's usage is
// the sum of its containers'; CPU in millicores ("12m"), memory in MiB
// rounded down ("34Mi"); sorted by name (namespace first with -A), or by
// cpu or memory highest first, containers too; every cell followed by a
// tab, in kubectl's tab writer.
func printPodMetrics(out io.Writer, items []wire.PodMetrics, o topPodOptions) error {
	w := printers.GetNewTabWriter(out)
	var header []string
	if o.allNamespaces {
		header = append(header, "NAMESPACE")
	}
	if o.containers {
		header = append(header, "POD")
	}
	header = append(header, "NAME", "CPU(cores)", "MEMORY(bytes)")
	if !o.noHeaders {
		printCells(w, header...)
	}
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b wire.PodMetrics) int {
		if o.sortBy != "" {
			return compareUsage(podUsage(&a), podUsage(&b), o.sortBy)
		}
		if o.allNamespaces && a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, m := range items {
		var lead []string
		if o.allNamespaces {
			lead = append(lead, m.Namespace)
		}
		if !o.containers {
			u := podUsage(&m)
			printCells(w, append(lead, m.Name, milliCores(u), mebibytes(u))...)
			continue
		}
		ctrs := slices.Clone(m.Containers)
		slices.SortStableFunc(ctrs, func(a, b wire.ContainerMetrics) int {
			if o.sortBy != "" {
				return compareUsage(a.Usage, b.Usage, o.sortBy)
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, c := range ctrs {
			printCells(w, append(lead, m.Name, c.Name, milliCores(c.Usage), mebibytes(c.Usage))...)
		}
	}
	return w.Flush()
}

// compareUsage orders a before b when it uses more of by (cpu or
// memory).
func compareUsage(a, b v1.ResourceList, by string) int {
	switch by {
	case "cpu":
		return -a.Cpu().Cmp(*b.Cpu())
	case "memory":
		return -a.Memory().Cmp(*b.Memory())
	}
	return 0
}

// podUsage is the sum of the usage of m's containers.
func podUsage(m *wire.PodMetrics) v1.ResourceList {
	cpu, mem := resource.Quantity{}, resource.Quantity{}
	for _, c := range m.Containers {
		cpu.Add(c.Usage[v1.ResourceCPU])
		mem.Add(c.Usage[v1.ResourceMemory])
	}
	return v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}
}

func milliCores(u v1.ResourceList) string { return fmt.Sprintf("%dm", u.Cpu().MilliValue()) }

func mebibytes(u v1.ResourceList) string {
	return fmt.Sprintf("%dMi", u.Memory().Value()/(1024*1024))
}

// printCells writes one row, each cell followed by a tab, as kubectl's
// top printer does.
func printCells(w io.Writer, cells ...string) {
	for _, c := range cells {
		fmt.Fprintf(w, "%s\t", c)
	}
	fmt.Fprintln(w)
}
