package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/client"
)

type getOptions struct {
	output        string
	templates     templateFlags
	watch         bool
	allNamespaces bool
}

func newGetCommand(s Streams, api *apiOptions) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get pods|configmaps|secrets [NAME...]",
		Short: "List pods, ConfigMaps or Secrets, as kubectl get does",
		Long: `Get prints the pods of the namespace (all of them with -A, or the ones named) in
kubectl's table: NAME READY STATUS RESTARTS AGE (-o wide adds IP, NODE, NOMINATED
NODE and READINESS GATES). READY counts regular containers and sidecars; STATUS is
computed as kubectl computes it (Init:1/2, PodInitializing, Running, Completed,
Error, CrashLoopBackOff, Terminating, ...). -o json|yaml prints the objects, -o
name prints pod/NAME. With -w the command goes on printing a row (or an object)
for every change until interrupted.

ConfigMaps (configmap, cm) and Secrets (secret) print kubectl's tables: NAME DATA
AGE, and NAME TYPE DATA AGE; -o yaml shows a Secret's data in base64, as kubectl.`,
		Example: `  podward get pods
  podward get pods -A -o wide
  podward get pod web -o yaml
  podward get pods -w
  podward get cm
  podward get secret creds -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE, jsonpath-as-json=TEMPLATE, go-template=TEMPLATE or go-template-file=FILE")
	o.templates.add(cmd)
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print every change until interrupted")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
	return cmd
}

func runGet(ctx context.Context, s Streams, api *apiOptions, o getOptions, args []string) error {
	if kind, names, ok, err := parseObjectArgs(args); ok {
		if err != nil {
			return usageError(err)
		}
		return runGetObjects(ctx, s, api, o, kind, names)
	}
	names, err := parsePodArgs(args)
	if err != nil {
		return usageError(err)
	}
	tmpl, err := checkOutputOrTemplate(o.output, o.templates, outputTable, outputWide, outputJSON, outputYAML, outputName)
	if err != nil {
		return usageError(err)
	}
	if o.watch && len(names) > 1 {
		return usageError(fmt.Errorf("watch is only supported on individual resources and resource collections, but %d resources were found", len(names)))
	}
	ns := api.listNamespace(o.allNamespaces)
	c := api.client()
	defer c.Close()

	// Watch before listing, so that no change between the two is missed;
	// the watch's first events repeat the list and are skipped.
	var w *client.Watch[v1.Pod]
	if o.watch {
		if w, err = c.WatchPods(ctx, ns, namesSelector(names)); err != nil {
			return report(s, err)
		}
		defer w.Close()
	}

	pods, failures, err := getPods(ctx, c, ns, names)
	if err != nil {
		return report(s, err)
	}
	pr := &podPrinter{objectStream: objectStream{out: s.Out, format: o.output, template: tmpl}, allNamespaces: o.allNamespaces, table: newTable(s.Out)}
	if err := pr.printGot(s, ns, names, pods); err != nil {
		return err
	}
	for _, err := range failures {
		fmt.Fprintln(s.Err, errorText(err))
	}
	if len(failures) > 0 {
		return &ExitError{Code: ExitFailed}
	}
	if w == nil {
		return nil
	}

	seen := map[types.UID]string{}
	for _, p := range pods {
		seen[p.UID] = p.ResourceVersion
	}
	return follow(ctx, s, w, func(ev client.Event[v1.Pod]) error {
		p := ev.Object
		if rv, ok := seen[p.UID]; ok && ev.Type == client.Added && rv == p.ResourceVersion {
			return nil
		}
		seen[p.UID] = p.ResourceVersion
		return pr.printOne(p)
	})
}

// namesSelector selects the one pod named, or every pod.
func namesSelector(names []string) client.ListOptions {
	if len(names) == 1 {
		return client.ListOptions{FieldSelector: "metadata.name=" + names[0]}
	}
	return client.ListOptions{}
}

// getPods lists the pods of ns, or gets the ones named. A name that cannot
// be got is a failure, and the others are still got; err is a list that
// failed, or no agent.
func getPods(ctx context.Context, c *client.Client, ns string, names []string) (pods []*v1.Pod, failures []error, err error) {
	if len(names) == 0 {
		list, err := c.ListPods(ctx, ns, client.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		return pods, nil, nil
	}
	return getEach(names, func(name string) (*v1.Pod, error) {
		return c.GetPod(ctx, ns, name)
	})
}

// getEach gets each name in turn, as get does for the names it is given:
// a name that cannot be got is a failure and the others are still got;
// a lost agent (a *client.ConnError) ends it and is err.
func getEach[T any](names []string, get func(name string) (T, error)) (got []T, failures []error, err error) {
	for _, name := range names {
		obj, err := get(name)
		if err != nil {
			var connErr *client.ConnError
			if errors.As(err, &connErr) {
				return nil, nil, err
			}
			failures = append(failures, err)
			continue
		}
		got = append(got, obj)
	}
	return got, failures, nil
}

// printGot prints what a get found: "No resources found" on stderr for an
// empty list in a table format, one object for a single name, else a list.
func (pr *podPrinter) printGot(s Streams, ns string, names []string, pods []*v1.Pod) error {
	if len(pods) == 0 && len(names) == 0 && (pr.format == outputTable || pr.format == outputWide || pr.format == outputName) {
		if ns == "" {
			fmt.Fprintln(s.Err, "No resources found")
		} else {
			fmt.Fprintf(s.Err, "No resources found in %s namespace.\n", ns)
		}
		return nil
	}
	if len(pods) > 0 || len(names) == 0 {
		return pr.printList(pods, len(names) == 1 && len(pods) == 1)
	}
	return nil
}

// podPrinter prints pods in one of get's formats; a table's header is
// printed once, before the first row.
type podPrinter struct {
	objectStream
	allNamespaces bool
	table         *table
}

// printList prints the pods of a get: one object when single, else a List.
func (pr *podPrinter) printList(pods []*v1.Pod, single bool) error {
	if pr.objects() {
		if single {
			return pr.printObject(withPodKind(pods[0]))
		}
		items := make([]any, 0, len(pods))
		for _, p := range pods {
			items = append(items, withPodKind(p))
		}
		return pr.printObject(newList(items))
	}
	for _, p := range pods {
		pr.addRow(p)
	}
	return pr.flush()
}

// printOne prints a pod that changed, while watching.
func (pr *podPrinter) printOne(p *v1.Pod) error {
	if pr.objects() {
		return pr.printObject(withPodKind(p))
	}
	pr.addRow(p)
	return pr.flush()
}

func (pr *podPrinter) addRow(p *v1.Pod) {
	if pr.format == outputName {
		pr.table.row("pod/" + p.Name)
		return
	}
	wide := pr.format == outputWide
	pr.table.header(podColumns(wide, pr.allNamespaces)...)
	pr.table.row(podRow(p, time.Now(), wide, pr.allNamespaces)...)
}

func (pr *podPrinter) flush() error { return pr.table.flush() }
