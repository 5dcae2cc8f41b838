package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podward/podward/internal/client"
)

type waitOptions struct {
	forCondition string
	timeout      time.Duration
}

func newWaitCommand(s Streams, api *apiOptions) *cobra.Command {
	o := waitOptions{timeout: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "wait (pod/NAME... | pod NAME...) --for=CONDITION",
		Short: "Wait for pods to meet a condition, as kubectl wait does",
		Long: `Wait watches each named pod until it meets the condition, prints
"pod/NAME condition met", and exits 0; after --timeout it prints
"error: timed out waiting for the condition on pods/NAME" and exits 1.

Conditions:
  --for=condition=Ready              a pod condition is True (condition=Ready=false: False)
  --for=delete                       the pod is gone
  --for=jsonpath='{.status.phase}'=Succeeded
                                     a field has a value; without =VALUE, the field exists.
                                     kubectl's JSONPath: the path must match one value.`,
		Example: `  podward wait pod/web --for=condition=Ready --timeout 60s
  podward wait pod/job --for=jsonpath='{.status.phase}'=Succeeded
  podward wait pod/web --for=delete`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWait(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.forCondition, "for", "", "the condition: delete, condition=NAME[=VALUE] or jsonpath='{PATH}'[=VALUE]")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait (0: check once; negative: a week)")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}

// waitCondition is a parsed --for.
type waitCondition struct {
	deleted    bool
	condType   string // condition=TYPE[=STATUS]
	condStatus string
	path       *jsonPathWait // jsonpath={PATH}[=VALUE]
}

func parseWaitFor(s string) (*waitCondition, error) {
	switch {
	case strings.EqualFold(s, "delete"):
		return &waitCondition{deleted: true}, nil
	case strings.HasPrefix(s, "condition="):
		typ, status, ok := strings.Cut(strings.TrimPrefix(s, "condition="), "=")
		if !ok {
			status = "True"
		}
		if typ == "" {
			return nil, fmt.Errorf("--for=%s: a condition name is required", s)
		}
		return &waitCondition{condType: typ, condStatus: status}, nil
	case strings.HasPrefix(s, "jsonpath="):
		rest := strings.TrimPrefix(s, "jsonpath=")
		end := strings.LastIndex(rest, "}")
		if !strings.HasPrefix(rest, "{") || end < 0 {
			return nil, fmt.Errorf("jsonpath wait format must be --for=jsonpath='{.status.phase}'=Succeeded, got --for=%s", s)
		}
		path, err := newJSONPathWait(rest[:end+1])
		if err != nil {
			return nil, err
		}
		if after := rest[end+1:]; after != "" {
			if !strings.HasPrefix(after, "=") {
				return nil, fmt.Errorf("jsonpath wait format must be --for=jsonpath='{.status.phase}'=Succeeded, got --for=%s", s)
			}
			path.value, path.hasValue = after[1:], true
		}
		return &waitCondition{path: path}, nil
	default:
		return nil, fmt.Errorf("unrecognized condition: %q", s)
	}
}

// met reports whether pod meets a condition or jsonpath wait.
func (c *waitCondition) met(p *v1.Pod) (bool, error) {
	if c.path == nil {
		for _, cond := range p.Status.Conditions {
			if strings.EqualFold(string(cond.Type), c.condType) {
				return strings.EqualFold(string(cond.Status), c.condStatus), nil
			}
		}
		return false, nil
	}
	return c.path.met(withPodKind(p))
}

func runWait(ctx context.Context, s Streams, api *apiOptions, o waitOptions, args []string) error {
	names, err := parsePodArgs(args)
	if err != nil {
		return usageError(err)
	}
	if len(names) == 0 {
		return usageError(errors.New("wait needs pod names: pod/NAME"))
	}
	cond, err := parseWaitFor(o.forCondition)
	if err != nil {
		return usageError(err)
	}
	timeout := o.timeout
	if timeout < 0 {
		timeout = 7 * 24 * time.Hour
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c := api.client()
	defer c.Close()
	for _, name := range names {
		err := waitPod(ctx, c, api.namespace, name, cond, timeout == 0)
		switch {
		case err == nil:
			fmt.Fprintf(s.Out, "pod/%s condition met\n", name)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errNotYet):
			fmt.Fprintf(s.Err, "error: timed out waiting for the condition on pods/%s\n", name)
			return &ExitError{Code: ExitFailed}
		default:
			return report(s, err)
		}
	}
	return nil
}

// errNotYet: the condition does not hold, and checking once was asked.
var errNotYet = errors.New("condition not met")

// waitPod waits until pod ns/name meets cond or ctx ends.
func waitPod(ctx context.Context, c *client.Client, ns, name string, cond *waitCondition, once bool) error {
	var w *client.Watch[v1.Pod]
	if !once {
		// Watch before reading, so that no change in between is missed.
		var err error
		w, err = c.WatchPods(ctx, ns, client.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return err
		}
		defer w.Close()
	}
	p, err := c.GetPod(ctx, ns, name)
	if cond.deleted {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case once:
			return errNotYet
		}
		return waitGone(ctx, w, p.UID)
	}
	if err != nil {
		return err
	}
	ok, err := cond.met(p)
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	case once:
		return errNotYet
	}
	return watchUntil(ctx, w, func(ev client.Event[v1.Pod]) (bool, error) {
		if ev.Type == client.Deleted {
			return false, nil
		}
		return cond.met(ev.Object)
	})
}
