package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
)

type resizeOptions struct {
	containers       string
	limits, requests string
}

func newResizeCommand(s Streams, api *apiOptions) *cobra.Command {
	o := resizeOptions{}
	cmd := &cobra.Command{
		Use:   "resize pod/NAME [--containers=NAMES] [--limits=cpu=Q,memory=Q] [--requests=cpu=Q,memory=Q]",
		Short: "Change the CPU and memory of a running pod's containers in place",
		Long: `Resize changes the cpu and memory requests and limits of the containers of the
running pod NAME through its resize subresource (KEP-1287), as
kubectl set resources --subresource resize or kubectl patch --subresource
resize do. --containers names the containers (comma-separated, sidecars
included; default '*', all of them). The agent applies the new resources to
the running containers without restarting them, unless a container's
resizePolicy says RestartContainer for a resource that changed: that
container alone is restarted. The pod's QoS class may not change.

The command returns once the resize is accepted; the containers' applied
resources are in status.containerStatuses[].resources, and a resize not yet
applied shows as the pod's PodResizePending / PodResizeInProgress condition
(podward get pod NAME -o yaml).`,
		Example: `  podward resize pod/web --containers=app --limits=memory=256Mi
  podward resize pod/web --limits=cpu=500m,memory=128Mi --requests=cpu=250m,memory=128Mi`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.limits == "" && o.requests == "" {
				return usageError(errors.New("you must specify an update to requests or limits (in the form of --requests/--limits)"))
			}
			limits, err := parseResources(o.limits)
			if err != nil {
				return usageError(err)
			}
			requests, err := parseResources(o.requests)
			if err != nil {
				return usageError(err)
			}
			return runResize(cmd.Context(), s, api, args[0], o.containers, limits, requests)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.containers, "containers", "c", "*", "the containers to resize, comma-separated ('*': all)")
	f.StringVar(&o.limits, "limits", "", "the new limits, e.g. cpu=200m,memory=512Mi")
	f.StringVar(&o.requests, "requests", "", "the new requests, e.g. cpu=100m,memory=256Mi")
	return cmd
}

// parseResources reads NAME=QUANTITY,... of cpu and memory, as kubectl
// set resources reads --limits and --requests.
func parseResources(s string) (v1.ResourceList, error) {
	if s == "" {
		return nil, nil
	}
	out := v1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("invalid argument syntax %s, expected <resource>=<value>", kv)
		}
		name := v1.ResourceName(k)
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			return nil, fmt.Errorf("only cpu and memory resources are mutable: %s", k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("invalid quantity %q for %s: %w", v, k, err)
		}
		out[name] = q
	}
	return out, nil
}

func runResize(ctx context.Context, s Streams, api *apiOptions, arg, containers string, limits, requests v1.ResourceList) error {
	c, pod, err := api.podOf(ctx, s, arg)
	if err != nil {
		return err
	}
	defer c.Close()
	name := pod.Name
	want := map[string]bool{}
	for _, n := range strings.Split(containers, ",") {
		want[n] = true
	}
	found := false
	set := func(ctr *v1.Container) {
		if !want["*"] && !want[ctr.Name] {
			return
		}
		found = true
		for k, q := range limits {
			if ctr.Resources.Limits == nil {
				ctr.Resources.Limits = v1.ResourceList{}
			}
			ctr.Resources.Limits[k] = q
		}
		for k, q := range requests {
			if ctr.Resources.Requests == nil {
				ctr.Resources.Requests = v1.ResourceList{}
			}
			ctr.Resources.Requests[k] = q
		}
	}
	for i := range pod.Spec.InitContainers {
		if model.IsSidecar(&pod.Spec.InitContainers[i]) {
			set(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		set(&pod.Spec.Containers[i])
	}
	if !found {
		return report(s, fmt.Errorf("unable to find container named %s", containers))
	}
	if _, err := c.ResizePod(ctx, api.namespace, name, pod); err != nil {
		return report(s, err)
	}
	fmt.Fprintf(s.Out, "pod/%s resource requirements updated\n", name)
	return nil
}
