package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/podward/podward/internal/client"
)

type eventsOptions struct {
	forObject     string
	watch         bool
	output        string
	templates     templateFlags
	allNamespaces bool
	types         []string
}

func newEventsCommand(s Streams, api *apiOptions) *cobra.Command {
	var o eventsOptions
	cmd := &cobra.Command{
		Use:   "events [--for pod/NAME] [-w]",
		Short: "List the events of the pods, as kubectl events does",
		Long: `Events prints the events the agent keeps for the namespace (every namespace with
-A), or for one pod with --for pod/NAME, oldest first, in kubectl events' table:
LAST SEEN TYPE REASON OBJECT MESSAGE. -o json|yaml prints an EventList. With -w
the command goes on printing each new event until interrupted.`,
		Example: `  podward events
  podward events --for pod/web -w
  podward events -A -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd.Context(), s, api, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.forObject, "for", "", "only the events of this pod: pod/NAME")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print each new event until interrupted")
	f.StringVarP(&o.output, "output", "o", "", "output format: json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, jsonpath-as-json=TEMPLATE, go-template=TEMPLATE or go-template-file=FILE")
	o.templates.add(cmd)
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "the events of every namespace")
	f.StringSliceVar(&o.types, "types", nil, "only events of these types: Normal, Warning")
	return cmd
}

func runEvents(ctx context.Context, s Streams, api *apiOptions, o eventsOptions) error {
	opts, tmpl, err := o.listOptions()
	if err != nil {
		return usageError(err)
	}
	ns := api.listNamespace(o.allNamespaces)
	c := api.client()
	defer c.Close()

	// Subscribe first, then list: no event falls between the two, and the
	// ones the watch repeats are skipped.
	var w *client.Watch[v1.Event]
	if o.watch {
		if w, err = c.WatchEvents(ctx, ns, opts); err != nil {
			return report(s, err)
		}
		defer w.Close()
	}
	list, err := c.ListEvents(ctx, ns, opts)
	if err != nil {
		return report(s, err)
	}
	items := make([]v1.Event, 0, len(list.Items))
	for _, e := range list.Items {
		if o.wants(&e) {
			items = append(items, e)
		}
	}
	sortEvents(items)

	pr := &eventPrinter{objectStream: objectStream{out: s.Out, format: o.output, template: tmpl}, allNamespaces: o.allNamespaces, table: newTable(s.Out)}
	if o.output != outputTable && !o.watch {
		list.Items = items
		list.Kind, list.APIVersion = "EventList", "v1"
		for i := range list.Items {
			withEventKind(&list.Items[i])
		}
		return pr.printObject(list)
	}
	if err := pr.printListed(s, ns, items); err != nil || w == nil {
		return err
	}

	seen := map[string]bool{}
	for i := range items {
		seen[eventKey(&items[i])] = true
	}
	return follow(ctx, s, w, func(ev client.Event[v1.Event]) error {
		if e := ev.Object; !seen[eventKey(e)] && o.wants(e) {
			return pr.print(e)
		}
		return nil
	})
}

// listOptions checks the flags and returns the list's (and the watch's)
// selection, and the printer of a template output format.
func (o eventsOptions) listOptions() (client.ListOptions, printers.ResourcePrinter, error) {
	opts := client.ListOptions{}
	tmpl, err := checkOutputOrTemplate(o.output, o.templates, outputTable, outputJSON, outputYAML)
	if err != nil {
		return opts, nil, err
	}
	for _, t := range o.types {
		if !strings.EqualFold(t, v1.EventTypeNormal) && !strings.EqualFold(t, v1.EventTypeWarning) {
			return opts, nil, fmt.Errorf("valid --types are Normal or Warning, got %q", t)
		}
	}
	if o.forObject != "" {
		kind, name, ok := strings.Cut(o.forObject, "/")
		if !ok || name == "" {
			return opts, nil, fmt.Errorf("--for must be pod/NAME, got %q", o.forObject)
		}
		if !isPodResource(kind) {
			return opts, nil, unknownResource(kind)
		}
		opts.FieldSelector = "involvedObject.kind=Pod,involvedObject.name=" + name
	}
	return opts, tmpl, nil
}

func (o eventsOptions) wants(e *v1.Event) bool {
	if len(o.types) == 0 {
		return true
	}
	for _, t := range o.types {
		if strings.EqualFold(t, e.Type) {
			return true
		}
	}
	return false
}

// eventKey identifies an event across a list and a watch.
func eventKey(e *v1.Event) string {
	return strings.Join([]string{e.Namespace, e.Name, string(e.InvolvedObject.UID), e.InvolvedObject.FieldPath, e.Reason, e.Message, e.LastTimestamp.UTC().Format(time.RFC3339Nano)}, "\x00")
}

// eventPrinter prints events one at a time: table rows (the header before
// the first) or objects.
type eventPrinter struct {
	objectStream
	allNamespaces bool
	table         *table
}

// printListed prints the events listed before a watch, or with the table
// format: a table in one flush, so that its columns align; "No events
// found" on stderr when there are none.
func (pr *eventPrinter) printListed(s Streams, ns string, items []v1.Event) error {
	switch {
	case len(items) == 0 && pr.format == outputTable:
		if ns == "" {
			fmt.Fprintln(s.Err, "No events found.")
		} else {
			fmt.Fprintf(s.Err, "No events found in %s namespace.\n", ns)
		}
		return nil
	case pr.format == outputTable:
		for i := range items {
			pr.add(&items[i])
		}
		return pr.table.flush()
	default:
		for i := range items {
			if err := pr.print(&items[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

func (pr *eventPrinter) print(e *v1.Event) error {
	if pr.objects() {
		return pr.printObject(withEventKind(e))
	}
	pr.add(e)
	return pr.table.flush()
}

// add queues a table row (after the header, the first time).
func (pr *eventPrinter) add(e *v1.Event) {
	pr.table.header(eventColumns(pr.allNamespaces)...)
	pr.table.row(eventRow(e, time.Now(), pr.allNamespaces)...)
}
