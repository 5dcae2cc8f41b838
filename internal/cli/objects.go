package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/client"
)

// objectKind is a kind of object the agent holds besides pods, as the
// CLI names it: "configmap" or "secret".
type objectKind string

const (
	kindConfigMap objectKind = "configmap"
	kindSecret    objectKind = "secret"
)

// objectResource says which object kind a kubectl resource name means, if
// any.
func objectResource(s string) (objectKind, bool) {
	switch strings.ToLower(s) {
	case "configmap", "configmaps", "cm":
		return kindConfigMap, true
	case "secret", "secrets":
		return kindSecret, true
	}
	return "", false
}

// parseObjectArgs reads "configmaps [NAME...]" or "cm/NAME..." (secrets
// alike). ok is false when the arguments do not name objects (they may
// name pods); names is empty for all of them.
func parseObjectArgs(args []string) (kind objectKind, names []string, ok bool, err error) {
	if len(args) == 0 {
		return "", nil, false, nil
	}
	if !strings.Contains(args[0], "/") {
		kind, ok = objectResource(args[0])
		return kind, args[1:], ok, nil
	}
	first, _, _ := strings.Cut(args[0], "/")
	if kind, ok = objectResource(first); !ok {
		return "", nil, false, nil
	}
	for _, a := range args {
		res, name, found := strings.Cut(a, "/")
		if !found {
			return "", nil, true, errors.New("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form")
		}
		if k, isObject := objectResource(res); !isObject || k != kind {
			return "", nil, true, fmt.Errorf("podward takes names of one resource type at a time: %q is not a %s", a, kind)
		}
		if name == "" {
			return "", nil, true, fmt.Errorf("arguments in resource/name form must have a single resource and name: %q", a)
		}
		names = append(names, name)
	}
	return kind, names, true, nil
}

// fetchObjects lists the objects of kind in ns, or gets the ones named. A
// name that cannot be got is a failure, the others are still got; err is
// a list that failed, or no agent. The objects carry their kind.
func fetchObjects(ctx context.Context, c *client.Client, kind objectKind, ns string, names []string) (objs []metav1.Object, failures []error, err error) {
	if len(names) == 0 {
		return listObjects(ctx, c, kind, ns)
	}
	return getEach(names, func(name string) (metav1.Object, error) {
		return getObject(ctx, c, kind, ns, name)
	})
}

func listObjects(ctx context.Context, c *client.Client, kind objectKind, ns string) ([]metav1.Object, []error, error) {
	var objs []metav1.Object
	if kind == kindSecret {
		list, err := c.ListSecrets(ctx, ns)
		if err != nil {
			return nil, nil, err
		}
		for i := range list.Items {
			objs = append(objs, withSecretKind(&list.Items[i]))
		}
		return objs, nil, nil
	}
	list, err := c.ListConfigMaps(ctx, ns)
	if err != nil {
		return nil, nil, err
	}
	for i := range list.Items {
		objs = append(objs, withConfigMapKind(&list.Items[i]))
	}
	return objs, nil, nil
}

func getObject(ctx context.Context, c *client.Client, kind objectKind, ns, name string) (metav1.Object, error) {
	if kind == kindSecret {
		s, err := c.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return withSecretKind(s), nil
	}
	cm, err := c.GetConfigMap(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return withConfigMapKind(cm), nil
}

func deleteObject(ctx context.Context, c *client.Client, kind objectKind, ns, name string) error {
	var err error
	if kind == kindSecret {
		_, err = c.DeleteSecret(ctx, ns, name)
	} else {
		_, err = c.DeleteConfigMap(ctx, ns, name)
	}
	return err
}

func withConfigMapKind(cm *v1.ConfigMap) *v1.ConfigMap {
	cm.Kind, cm.APIVersion = "ConfigMap", "v1"
	return cm
}

func withSecretKind(s *v1.Secret) *v1.Secret {
	s.Kind, s.APIVersion = "Secret", "v1"
	return s
}

// objectColumns are kubectl's: NAME DATA AGE for ConfigMaps, NAME TYPE
// DATA AGE for Secrets (the same with -o wide), NAMESPACE first with -A.
func objectColumns(kind objectKind, allNamespaces bool) []string {
	cols := []string{"NAME", "DATA", "AGE"}
	if kind == kindSecret {
		cols = []string{"NAME", "TYPE", "DATA", "AGE"}
	}
	if allNamespaces {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	return cols
}

// objectRow is an object's row of objectColumns: DATA counts the keys of
// data and binaryData.
func objectRow(obj metav1.Object, now time.Time, allNamespaces bool) []string {
	var row []string
	switch o := obj.(type) {
	case *v1.Secret:
		row = []string{o.Name, string(o.Type), fmt.Sprint(len(o.Data)), since(o.CreationTimestamp, now)}
	case *v1.ConfigMap:
		row = []string{o.Name, fmt.Sprint(len(o.Data) + len(o.BinaryData)), since(o.CreationTimestamp, now)}
	}
	if allNamespaces {
		row = append([]string{obj.GetNamespace()}, row...)
	}
	return row
}

// runGetObjects is get for ConfigMaps and Secrets, in kubectl's table and
// formats; -w is not supported for them.
func runGetObjects(ctx context.Context, s Streams, api *apiOptions, o getOptions, kind objectKind, names []string) error {
	tmpl, err := checkOutputOrTemplate(o.output, o.templates, outputTable, outputWide, outputJSON, outputYAML, outputName)
	if err != nil {
		return usageError(err)
	}
	if o.watch {
		return usageError(fmt.Errorf("podward cannot watch %ss", kind))
	}
	ns := api.listNamespace(o.allNamespaces)
	c := api.client()
	defer c.Close()
	objs, failures, err := fetchObjects(ctx, c, kind, ns, names)
	if err != nil {
		return report(s, err)
	}
	st := objectStream{out: s.Out, format: o.output, template: tmpl}
	if err := printObjects(s, &st, kind, ns, names, objs, o.allNamespaces); err != nil {
		return err
	}
	for _, err := range failures {
		fmt.Fprintln(s.Err, errorText(err))
	}
	if len(failures) > 0 {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// printObjects prints what a get found, as printGot does for pods.
func printObjects(s Streams, st *objectStream, kind objectKind, ns string, names []string, objs []metav1.Object, allNamespaces bool) error {
	rows := st.format == outputTable || st.format == outputWide || st.format == outputName
	if len(objs) == 0 && len(names) == 0 && rows {
		if ns == "" {
			fmt.Fprintln(s.Err, "No resources found")
		} else {
			fmt.Fprintf(s.Err, "No resources found in %s namespace.\n", ns)
		}
		return nil
	}
	if len(objs) == 0 && len(names) > 0 {
		return nil
	}
	if st.objects() {
		if len(names) == 1 && len(objs) == 1 {
			return st.printObject(objs[0])
		}
		items := make([]any, 0, len(objs))
		for _, obj := range objs {
			items = append(items, obj)
		}
		return st.printObject(newList(items))
	}
	t := newTable(s.Out)
	now := time.Now()
	for _, obj := range objs {
		if st.format == outputName {
			t.row(string(kind) + "/" + obj.GetName())
			continue
		}
		t.header(objectColumns(kind, allNamespaces)...)
		t.row(objectRow(obj, now, allNamespaces)...)
	}
	return t.flush()
}

func mapKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }

// deleteObjects is delete for ConfigMaps and Secrets: each is gone at
// once, `configmap "NAME" deleted`; one that does not exist is a failure
// (none with --ignore-not-found) and the next is deleted.
func deleteObjects(ctx context.Context, s Streams, api *apiOptions, o deleteOptions, kind objectKind, names []string) error {
	if len(names) == 0 {
		return usageError(errors.New(`resource(s) were provided, but no name was specified`))
	}
	c := api.client()
	defer c.Close()
	failed := false
	for _, name := range names {
		ok, err := deleteOneObject(ctx, s, c, o, kind, api.namespace, name)
		if err != nil {
			return err
		}
		failed = failed || !ok
	}
	if failed {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// deleteOneObject deletes one object and says so; a failure is reported
// (ok false) unless it is --ignore-not-found's, a lost agent is the error.
func deleteOneObject(ctx context.Context, s Streams, c *client.Client, o deleteOptions, kind objectKind, ns, name string) (ok bool, err error) {
	if err := deleteObject(ctx, c, kind, ns, name); err != nil {
		failed, fatal := deleteFailed(s, o, err)
		return !failed, fatal
	}
	fmt.Fprintf(s.Out, "%s %q deleted\n", kind, name)
	return true, nil
}

// deleteFiles is delete -f: the pods of the files, as delete pod deletes
// them (waiting for them with --wait), then their ConfigMaps and Secrets.
// A document without a namespace is in -n's.
func deleteFiles(ctx context.Context, s Streams, api *apiOptions, o deleteOptions, files []string) error {
	m, err := readApplied(s, files)
	if err != nil {
		return usageError(err)
	}
	c := api.client()
	defer c.Close()
	d := &deletion{s: s, c: c, o: o, opts: o.clientOptions()}
	defer d.closeWatches()
	for _, doc := range m.Pods {
		d.ns = cmp.Or(doc.Namespace, api.namespace)
		if err := d.deletePod(ctx, doc.Pod.Name); err != nil {
			return err
		}
	}
	for _, obj := range m.Objects {
		kind := kindConfigMap
		if obj.Secret != nil {
			kind = kindSecret
		}
		ok, err := deleteOneObject(ctx, s, c, o, kind, cmp.Or(obj.Namespace, api.namespace), obj.Meta().Name)
		if err != nil {
			return err
		}
		d.failed = d.failed || !ok
	}
	return d.finish(ctx)
}
