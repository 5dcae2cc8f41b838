package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/podward/podward/internal/timeline"
)

type timelineOptions struct {
	output string
	width  int
}

func newTimelineCommand(s Streams, api *apiOptions) *cobra.Command {
	var o timelineOptions
	cmd := &cobra.Command{
		Use:   "timeline (pod/NAME | pod NAME)",
		Short: "Draw a pod's life as a Gantt chart: in the terminal, or as SVG",
		Long: `Timeline draws the pod's lifecycle as the agent recorded it: one row per container
instance (init, sidecar, main and defer containers; each restart is an instance
of its own), from its start to its exit, with its probe failures (!), the
beginning of its stop (▒: the preStop hook, the stop signal, the wait for the
exit), its stop signal (◆) and SIGKILL (✕) marked, and the pod's termination
request (│) and deadline (┆) drawn across the rows. The window spans the pod's
life: from its creation to its termination, or now.

It works for a pod that is gone too, as long as the agent keeps its records (as
its events: until 256 more pods were removed, or the agent restarts).

In the terminal it uses Unicode blocks, in colour when stdout is a terminal and
NO_COLOR is unset, as wide as the terminal (--width to choose). -o svg writes a
self-contained SVG picture (--width in pixels, default 960) for a bug report or
the docs.`,
		Example: `  podward timeline pod/web
  podward timeline pod/web --width 120
  podward timeline pod/web -o svg > web.svg`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTimeline(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output format: svg (default: the terminal's picture)")
	f.IntVar(&o.width, "width", 0, "the picture's width: columns in the terminal (default: the terminal's, else 100), pixels in SVG (default 960)")
	return cmd
}

func runTimeline(ctx context.Context, s Streams, api *apiOptions, o timelineOptions, args []string) error {
	name, err := timelinePod(args)
	if err != nil {
		return usageError(err)
	}
	if o.output != "" && o.output != "svg" {
		return usageError(fmt.Errorf("unknown output format %q: svg, or none for the terminal", o.output))
	}
	if o.width < 0 {
		return usageError(fmt.Errorf("--width must not be negative, got %d", o.width))
	}
	c := api.client()
	defer c.Close()
	p, err := c.PodTimeline(ctx, api.namespace, name)
	if err != nil {
		return report(s, err)
	}
	w := p.DefaultWindow()
	if o.output == "svg" {
		return timeline.SVG(s.Out, p, w, o.width)
	}
	width := o.width
	if width == 0 {
		width = terminalWidth(s.Out)
	}
	return timeline.Text(s.Out, p, w, timeline.TextOptions{Width: width, Color: useColor("auto", s.Out)})
}

// timelinePod reads the one pod argument: pod/NAME, pod NAME or NAME.
func timelinePod(args []string) (string, error) {
	switch len(args) {
	case 1:
		return podName(args[0])
	case 2:
		names, err := parsePodArgs(args)
		if err != nil {
			return "", err
		}
		if len(names) == 1 {
			return names[0], nil
		}
	}
	return "", errors.New("timeline takes one pod: pod/NAME")
}

// terminalWidth is the width of the terminal w is, else $COLUMNS, else
// timeline.TextWidth.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return timeline.TextWidth
}
