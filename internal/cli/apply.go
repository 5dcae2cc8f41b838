package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

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
	type item struct {
		pod       *model.Pod
		namespace string // as written in the manifest
	}
	var items []item
	for _, file := range files {
		data, err := readManifest(s, file)
		if err != nil {
			return usageError(err)
		}
		pods, err := model.Decode(data)
		if err != nil {
			return usageError(fmt.Errorf("%s:\n%w", file, err))
		}
		written := writtenNamespaces(data, len(pods))
		for i, p := range pods {
			items = append(items, item{pod: p, namespace: written[i]})
		}
	}

	c := api.client()
	defer c.Close()
	code := ExitSucceeded
	for _, it := range items {
		pod := it.pod
		switch {
		case it.namespace == "":
			pod.Namespace = api.namespace
		case nsGiven && it.namespace != api.namespace:
			fmt.Fprintf(s.Err, "error: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.\n",
				it.namespace, api.namespace, it.namespace)
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

// writtenNamespaces returns the metadata.namespace written in each
// document of a manifest ("" where there is none), for the n pods that
// model.Decode found in it: Decode fills in "default", and apply must tell
// an absent namespace (which -n sets) from a written one. If the documents
// cannot be matched up with the pods, every namespace counts as absent.
func writtenNamespaces(data []byte, n int) []string {
	out := make([]string, 0, n)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc struct {
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Kind string `json:"kind"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return make([]string, n)
		}
		if doc.Kind == "" && doc.Metadata.Namespace == "" {
			continue // an empty document
		}
		out = append(out, doc.Metadata.Namespace)
	}
	if len(out) != n {
		return make([]string, n)
	}
	return out
}
