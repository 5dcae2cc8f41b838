package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process"
)

// runtimeOptions selects and configures the container runtime of `run` and
// `serve`.
type runtimeOptions struct {
	kind string // "process" or "cri"
}

func (o *runtimeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kind, "runtime", "process", "container runtime: process (host processes, nothing to install) or cri (containers through a CRI runtime such as containerd)")
}

// openRuntime is the agent's runtime, whose state lives under root.
type openRuntime interface {
	agent.Runtime
	io.Closer
}

// open starts the selected runtime. output, when set, receives every line
// the containers write (for `podward run`).
func (o *runtimeOptions) open(ctx context.Context, root string, clk clock.Clock, log *slog.Logger, output func(pod *model.Pod, container, stream string, line []byte)) (openRuntime, error) {
	switch o.kind {
	case "process":
		return process.New(process.Config{Root: filepath.Join(root, "process"), Clock: clk, Logger: log, Output: output})
	default:
		return nil, fmt.Errorf("--runtime: unknown runtime %q (want process or cri)", o.kind)
	}
}
