package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cri"
	"github.com/podward/podward/internal/runtime/process"
)

// runtimeOptions selects and configures the container runtime of `run` and
// `serve`.
type runtimeOptions struct {
	kind        string // "process" or "cri"
	criEndpoint string
	pullSecrets string
	podNetwork  bool
}

func (o *runtimeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kind, "runtime", "process", "container runtime: process (host processes, nothing to install) or cri (containers through a CRI runtime such as containerd)")
	f.StringVar(&o.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "the CRI runtime's socket (--runtime cri)")
	f.StringVar(&o.pullSecrets, "image-pull-secrets-dir", "", "directory of image pull secrets: spec.imagePullSecrets name N is the dockerconfigjson file N.json (--runtime cri)")
	f.BoolVar(&o.podNetwork, "cri-pod-network", false, "give pods without hostNetwork their own network namespace through the CRI runtime's CNI (--runtime cri; default: every pod on the host network)")
}

// openRuntime is the agent's runtime, whose state lives under root.
type openRuntime interface {
	runtime.Runtime
	io.Closer
}

// open starts the selected runtime. output, when set, receives every line
// the containers write (for `podward run`).
func (o *runtimeOptions) open(ctx context.Context, root string, clk clock.Clock, log *slog.Logger, output func(pod *model.Pod, container, stream string, line []byte)) (openRuntime, error) {
	switch o.kind {
	case "process":
		return process.New(process.Config{Root: filepath.Join(root, "process"), Clock: clk, Logger: log, Output: output})
	case "cri":
		rt, err := cri.New(ctx, cri.Config{
			Endpoint: o.criEndpoint, Root: filepath.Join(root, "cri"), Clock: clk, Logger: log, Output: output,
			PullSecretsDir: o.pullSecrets, PodNetwork: o.podNetwork,
		})
		if err != nil {
			return nil, fmt.Errorf("CRI runtime at %s: %w", o.criEndpoint, err)
		}
		return rt, nil
	default:
		return nil, fmt.Errorf("--runtime: unknown runtime %q (want process or cri)", o.kind)
	}
}
