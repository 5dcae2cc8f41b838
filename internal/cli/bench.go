package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podward/podward/internal/bench"
)

func newBenchCommand(s Streams) *cobra.Command {
	o := bench.Defaults()
	var out string
	cmd := &cobra.Command{
		Use:   "bench [--only start,stop,scale,churn] [--out results.json]",
		Short: "Measure podward: start, stop, scale and churn against a podward serve it starts, beside the fork/exec (or direct CRI) floor",
		Long: `Bench starts its own agent (podward serve on a private root and socket, this
binary) and measures it, printing a table (and, with --out, writing JSON):

  start  pods of 1 sidecar + 2 regular containers, from the create call to the
         last container's own first line (each container writes its
         $EPOCHREALTIME to a file), one after another and in rounds of
         --parallel at once; beside each, the floor: the same three processes
         forked by the bench itself (process runtime), or the same CRI calls
         made directly over gRPC (RunPodSandbox, then Create+Start of the
         sidecar, then of the two regular containers) on the CRI runtime
  stop   from the delete call to the pod's removal: TERM-responsive
         containers (floor: SIGTERM and wait, in podward's order), and pods
         with two defer containers of 50 ms each and a 60 s grace period
  scale  --scale pods × 3 sleeping containers: time until all run, an idle
         window (the agent's CPU, RSS, fds, threads; the shims' PSS from
         /proc/PID/smaps_rollup), time until a delete of all is over; then
         --scale-probe-pods pods with an exec readiness probe every second
  churn  --churn-in-flight create/delete cycles at once for --churn-window;
         then what is left (pods, processes, fds, goroutines, the state file)

Latencies are medians, with p90 and p99 from 100 samples on. It needs what the
agent needs of the machine (root for the CRI runtime) and takes a while at the
default sizes (the scale scenario alone some 5 minutes); small sizes make a
quick run.`,
		Example: `  podward bench --out results.json
  podward bench --only start,stop --start-pods 200
  podward bench --only scale --scale 100,300 --idle 30s
  podward bench --runtime cri --cri-endpoint unix:///run/containerd/containerd.sock --only start,stop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, s, o, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "write the results as JSON to this file")
	f.StringSliceVar(&o.Only, "only", nil, "the scenarios to run: "+strings.Join(bench.Scenarios, ",")+" (default all)")
	f.StringVar(&o.Runtime, "runtime", o.Runtime, "the agent's runtime: process or cri")
	f.StringVar(&o.CRIEndpoint, "cri-endpoint", "", "the CRI runtime's socket (--runtime cri)")
	f.StringVar(&o.Dir, "dir", "", "directory for the agent's root, socket and log, kept afterwards (default: a temporary one, removed)")
	f.IntVar(&o.StartPods, "start-pods", o.StartPods, "start: pods started one after another (and as many floor pods)")
	f.IntVar(&o.Parallel, "parallel", o.Parallel, "start: pods started at once in each round")
	f.IntVar(&o.ParallelRounds, "parallel-rounds", o.ParallelRounds, "start: rounds of --parallel pods")
	f.IntVar(&o.StopPods, "stop-pods", o.StopPods, "stop: pods of TERM-responsive containers deleted (and as many floor pods)")
	f.IntVar(&o.DeferPods, "defer-pods", o.DeferPods, "stop: pods with two defer containers deleted")
	f.IntSliceVar(&o.Scale, "scale", o.Scale, "scale: pod counts, 3 containers each")
	f.IntVar(&o.ScaleProbePods, "scale-probe-pods", o.ScaleProbePods, "scale: pods with an exec readiness probe every second on each container (0: none)")
	f.DurationVar(&o.Idle, "idle", o.Idle, "scale: each idle window")
	f.DurationVar(&o.Settle, "settle", o.Settle, "scale: wait before each idle window, once all pods run")
	f.DurationVar(&o.ChurnWindow, "churn-window", o.ChurnWindow, "churn: how long cycles are started")
	f.IntVar(&o.ChurnInFlight, "churn-in-flight", o.ChurnInFlight, "churn: cycles at once")
	f.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "API calls in flight when many pods are created or deleted at once")
	f.DurationVar(&o.PodTimeout, "pod-timeout", o.PodTimeout, "bound of each wait on a pod (or a batch of them)")
	f.StringVar(&o.ProfileDir, "profile-dir", "", "run the agent with --pprof and write its profiles here: CPU of each scale apply and delete of all (in 5 s chunks, for go tool pprof to merge), heap and goroutines at each idle window's end")
	return cmd
}

func runBench(cmd *cobra.Command, s Streams, o bench.Options, out string) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the podward binary: %w", err)
	}
	o.Podward = bin
	o.Progress = s.Err
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, runErr := bench.Run(ctx, o)
	if res == nil {
		return &ExitError{Code: ExitFailed, Err: runErr}
	}
	// What a run that failed midway measured is still shown and written.
	res.Command = benchCommandLine(cmd.Flags())
	if err := res.WriteTable(s.Out); err != nil {
		return err
	}
	if out != "" {
		if err := writeBenchJSON(res, out); err != nil {
			return err
		}
	}
	if runErr != nil {
		return &ExitError{Code: ExitFailed, Err: runErr}
	}
	return nil
}

// benchCommandLine is the command line that runs the same bench again.
func benchCommandLine(f *pflag.FlagSet) []string {
	line := []string{"podward", "bench"}
	f.Visit(func(fl *pflag.Flag) {
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		line = append(line, "--"+fl.Name+"="+v)
	})
	return line
}

func writeBenchJSON(res *bench.Results, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := res.WriteJSON(f); err != nil {
		f.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return f.Close()
}
