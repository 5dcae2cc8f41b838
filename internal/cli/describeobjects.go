package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runDescribeObjects is describe for ConfigMaps and Secrets: every one of
// the namespace without a name.
func runDescribeObjects(ctx context.Context, s Streams, api *apiOptions, kind objectKind, names []string) error {
	c := api.client()
	defer c.Close()
	objs, failures, err := fetchObjects(ctx, c, kind, api.namespace, names)
	if err != nil {
		return report(s, err)
	}
	if len(failures) > 0 {
		return report(s, failures[0])
	}
	if len(objs) == 0 {
		fmt.Fprintf(s.Err, "No resources found in %s namespace.\n", api.namespace)
		return nil
	}
	for i, obj := range objs {
		if i > 0 {
			fmt.Fprint(s.Out, "\n\n")
		}
		if _, err := io.WriteString(s.Out, describeObject(obj)); err != nil {
			return err
		}
	}
	return nil
}

// describeObject renders a ConfigMap or a Secret as kubectl describe
// does. A Secret's values are never shown: only their sizes.
func describeObject(obj metav1.Object) string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	w := prefixWriter{tw: tw}
	w.write(0, "Name:\t%s\n", obj.GetName())
	w.write(0, "Namespace:\t%s\n", obj.GetNamespace())
	writeMap(w, "Labels", obj.GetLabels())
	writeAnnotations(w, obj.GetAnnotations())
	switch o := obj.(type) {
	case *v1.Secret:
		w.write(0, "\nType:\t%s\n", o.Type)
		w.write(0, "\nData\n====\n")
		for _, k := range slices.Sorted(mapKeys(o.Data)) {
			w.write(0, "%s:\t%d bytes\n", k, len(o.Data[k]))
		}
	case *v1.ConfigMap:
		w.write(0, "\nData\n====\n")
		for _, k := range slices.Sorted(mapKeys(o.Data)) {
			w.write(0, "%s:\n----\n", k)
			w.write(0, "%s\n", o.Data[k])
			w.write(0, "\n")
		}
		w.write(0, "\nBinaryData\n====\n")
		for _, k := range slices.Sorted(mapKeys(o.BinaryData)) {
			w.write(0, "%s: %d bytes\n", k, len(o.BinaryData[k]))
		}
		w.write(0, "\n")
		w.write(0, "Events:\t<none>\n")
	}
	_ = tw.Flush()
	return buf.String()
}
