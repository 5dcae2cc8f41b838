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
		Short: "Create the pods of a manifest, or replace those whose spec changed",
		Long: `Apply sends each pod of FILE (YAML or JSON, one or more documents; - for stdin) to
the agent and prints what happened, in kubectl's words:

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
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest with one or more Pods (YAML or JSON; - for stdin); may be repeated")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runApply(ctx context.Context, s Streams, api *apiOptions, files []string, nsGiven bool) error {
	items, err := readApplied(s, files)
	if err != nil {
		return usageError(err)
	}

	c := api.client()
	defer c.Close()
	code := ExitSucceeded
	for _, it := range items {
		pod := it.Pod
		switch {
		case it.Namespace == "":
			pod.Namespace = api.namespace
		case nsGiven && it.Namespace != api.namespace:
			fmt.Fprintf(s.Err, "error: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.\n",
				it.Namespace, api.namespace, it.Namespace)
			code = max(code, ExitFailed)
			continue
		}
		_, res, err := c.ApplyPod(ctx, pod.Pod)
		if err != nil {
			var connErr *client.ConnError
			if errors.As(err, &connErr) {
				return report(s, err)
			}
			fmt.Fprintln(s.Err, errorText(err))
			code = max(code, exitCode(err))
			continue
		}
		fmt.Fprintf(s.Out, "pod/%s %s\n", pod.Name, res)
	}
	if code != ExitSucceeded {
		return &ExitError{Code: code}
	}
	return nil
}

// readApplied reads and decodes the pods of every file, in order, each
// with the namespace its document wrote ("" for none, which -n then sets).
// A file over model.MaxManifestBytes is refused before it is decoded.
func readApplied(s Streams, files []string) ([]model.Document, error) {
	var items []model.Document
	for _, file := range files {
		data, err := readManifest(s, file)
		if err != nil {
			return nil, err
		}
		docs, err := model.DecodeDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s:\n%w", file, err)
		}
		items = append(items, docs...)
	}
	return items, nil
}
