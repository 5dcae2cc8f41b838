package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/model"
)

func newApplyCommand(s Streams, api *apiOptions) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create the pods, ConfigMaps and Secrets of a manifest, or replace those that changed",
		Long: `Apply sends each ConfigMap and Secret of FILE (YAML or JSON, one or more documents
or Lists; - for stdin), then each pod, to the agent and prints what happened, in
kubectl's words (configmap/NAME and secret/NAME alike):

  pod/web created       the pod did not exist
  pod/web unchanged     it exists with the same spec
  pod/web configured    its spec changed: a pod's spec is immutable, so the old pod
                        is deleted gracefully and the new one starts once it is gone

A pod without a namespace goes to -n (default "default"). A manifest that does
not decode, or a pod the agent finds invalid, is reported field by field and
the exit code is 2; other failures exit with 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd.Context(), s, api, files, cmd.Flag("namespace").Changed)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest with Pods, ConfigMaps and Secrets (YAML or JSON; - for stdin); may be repeated")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runApply(ctx context.Context, s Streams, api *apiOptions, files []string, nsGiven bool) error {
	m, err := readApplied(s, files)
	if err != nil {
		return usageError(err)
	}

	c := api.client()
	defer c.Close()
	a := &applier{s: s, api: api, c: c, nsGiven: nsGiven}
	// Objects first: the pods that read them find them.
	for _, obj := range m.Objects {
		if err := a.applyObject(ctx, obj); err != nil {
			return err
		}
	}
	for _, it := range m.Pods {
		if err := a.applyPod(ctx, it); err != nil {
			return err
		}
	}
	if a.code != ExitSucceeded {
		return &ExitError{Code: a.code}
	}
	return nil
}

// applier applies the items of a manifest one after another: a failure is
// reported and the next item applied; code is the worst so far.
type applier struct {
	s       Streams
	api     *apiOptions
	c       *client.Client
	nsGiven bool
	code    int
}

// namespace reconciles the namespace a document wrote with -n: "" takes
// -n, another one than a given -n is refused, as kubectl.
func (a *applier) namespace(written string) (string, bool) {
	switch {
	case written == "":
		return a.api.namespace, true
	case a.nsGiven && written != a.api.namespace:
		fmt.Fprintf(a.s.Err, "error: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.\n",
			written, a.api.namespace, written)
		a.code = max(a.code, ExitFailed)
		return "", false
	}
	return written, true
}

// result prints what an apply did, or its failure; a lost agent ends the
// command.
func (a *applier) result(what string, res client.ApplyResult, err error) error {
	if err != nil {
		var connErr *client.ConnError
		if errors.As(err, &connErr) {
			return report(a.s, err)
		}
		fmt.Fprintln(a.s.Err, errorText(err))
		a.code = max(a.code, exitCode(err))
		return nil
	}
	fmt.Fprintf(a.s.Out, "%s %s\n", what, res)
	return nil
}

func (a *applier) applyPod(ctx context.Context, it model.Document) error {
	ns, ok := a.namespace(it.Namespace)
	if !ok {
		return nil
	}
	it.Pod.Namespace = ns
	_, res, err := a.c.ApplyPod(ctx, it.Pod.Pod)
	return a.result("pod/"+it.Pod.Name, res, err)
}

func (a *applier) applyObject(ctx context.Context, obj model.Object) error {
	ns, ok := a.namespace(obj.Namespace)
	if !ok {
		return nil
	}
	obj.SetNamespace(ns)
	if obj.Secret != nil {
		_, res, err := a.c.ApplySecret(ctx, obj.Secret)
		return a.result("secret/"+obj.Secret.Name, res, err)
	}
	_, res, err := a.c.ApplyConfigMap(ctx, obj.ConfigMap)
	return a.result("configmap/"+obj.ConfigMap.Name, res, err)
}

// readApplied reads and decodes the pods and objects of every file, each
// with the namespace its document wrote ("" for none, which -n then
// sets). A file over model.MaxManifestBytes is refused before it is
// decoded.
func readApplied(s Streams, files []string) (*model.Manifest, error) {
	all := &model.Manifest{}
	for _, file := range files {
		data, err := readManifest(s, file)
		if err != nil {
			return nil, err
		}
		m, err := model.DecodeManifest(data)
		if err != nil {
			return nil, fmt.Errorf("%s:\n%w", file, err)
		}
		all.Pods = append(all.Pods, m.Pods...)
		all.Objects = append(all.Objects, m.Objects...)
	}
	return all, nil
}
